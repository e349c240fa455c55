CREATE TABLE "signing_certificates" (
	"fingerprint" text PRIMARY KEY NOT NULL,
	"identity_kind" text NOT NULL,
	"cert_pem" text NOT NULL,
	"issuer_pem" text,
	"serial" text NOT NULL,
	"not_before" timestamp with time zone NOT NULL,
	"not_after" timestamp with time zone NOT NULL,
	"first_used_at" timestamp with time zone NOT NULL,
	"replaced_at" timestamp with time zone,
	"replaced_reason" text,
	"ocsp_status" text,
	"revoked_at" timestamp with time zone,
	"checked_at" timestamp with time zone,
	"next_check_at" timestamp with time zone,
	"ocsp_error" text
);
--> statement-breakpoint
ALTER TABLE "user_profiles" ADD COLUMN "certificate_fingerprint" text;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "cert_fingerprint" text;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "cert_not_before" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "cert_not_after" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "profile_uuid" text;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "profile_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "profile_certificates" jsonb;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "resigning" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "last_used_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "sign_requests_cert_idx" ON "sign_requests" USING btree ("cert_fingerprint");