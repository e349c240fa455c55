CREATE TABLE "sign_requests" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"source" text NOT NULL,
	"app_id" bigint NOT NULL,
	"app_ver_id" bigint NOT NULL,
	"sign_type" integer NOT NULL,
	"status" text NOT NULL,
	"state" text DEFAULT 'idle' NOT NULL,
	"source_key" text,
	"title" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"worker" text,
	"lease_expires_at" timestamp with time zone,
	"last_reason" text,
	"requested_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"artifact_id" text,
	"file_key" text,
	"signed_at" timestamp with time zone,
	"udids" jsonb,
	"bundle_id" text,
	"bundle_version" text,
	"size_bytes" bigint,
	"source_tag" text
);
--> statement-breakpoint
ALTER TABLE "sign_requests" ADD CONSTRAINT "sign_requests_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
CREATE UNIQUE INDEX "sign_requests_key" ON "sign_requests" USING btree ("user_id","source","app_id","app_ver_id","sign_type");--> statement-breakpoint
CREATE UNIQUE INDEX "sign_requests_artifact_key" ON "sign_requests" USING btree ("artifact_id");--> statement-breakpoint
CREATE INDEX "sign_requests_version_idx" ON "sign_requests" USING btree ("app_id","app_ver_id");--> statement-breakpoint
CREATE INDEX "sign_requests_claim_idx" ON "sign_requests" USING btree ("requested_at","id") WHERE "sign_requests"."state" = 'queued';--> statement-breakpoint
CREATE INDEX "sign_requests_lease_idx" ON "sign_requests" USING btree ("lease_expires_at") WHERE "sign_requests"."state" = 'leased';