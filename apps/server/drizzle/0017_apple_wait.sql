ALTER TABLE "devices" ADD COLUMN "apple_wait_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "apple_wait_checks" integer DEFAULT 0 NOT NULL;
