CREATE TABLE "enrollment_tokens" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "device_name" text;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "apple_device_id" text;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "retry_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "lease_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "confirmed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "enrollment_tokens" ADD CONSTRAINT "enrollment_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
CREATE INDEX "enrollment_tokens_user_idx" ON "enrollment_tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "enrollment_tokens_expires_idx" ON "enrollment_tokens" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "devices_waiting_idx" ON "devices" USING btree ("status","id") WHERE status in ('Pending', 'Process');