ALTER TABLE "jobs" ADD COLUMN "failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "lost_leases" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "lost_leases" integer DEFAULT 0 NOT NULL;