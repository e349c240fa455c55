CREATE TABLE "agents" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone,
	"done_count" integer DEFAULT 0 NOT NULL,
	"failed_count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "agents_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"version_seq" bigint,
	"country" text NOT NULL,
	"app_id" bigint NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	"state" text DEFAULT 'queued' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"agent_id" bigint,
	"lease_expires_at" timestamp with time zone,
	"reported_app_ver_id" bigint,
	"last_reason" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "store_version_lists" (
	"country" text NOT NULL,
	"app_id" bigint NOT NULL,
	"versions" jsonb NOT NULL,
	"fetched_at" timestamp with time zone NOT NULL,
	CONSTRAINT "store_version_lists_country_app_id_pk" PRIMARY KEY("country","app_id")
);
--> statement-breakpoint
ALTER TABLE "versions" ADD COLUMN "minimum_os" text;--> statement-breakpoint
ALTER TABLE "versions" ADD COLUMN "size_bytes" bigint;--> statement-breakpoint
ALTER TABLE "versions" ADD COLUMN "file_key" text;--> statement-breakpoint
ALTER TABLE "versions" ADD COLUMN "progress" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_version_seq_versions_seq_fk" FOREIGN KEY ("version_seq") REFERENCES "public"."versions"("seq") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "jobs_claim_idx" ON "jobs" USING btree ("priority" DESC NULLS LAST,"id") WHERE "jobs"."state" = 'queued';--> statement-breakpoint
CREATE INDEX "jobs_lease_idx" ON "jobs" USING btree ("lease_expires_at") WHERE "jobs"."state" = 'leased';--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_version_key" ON "jobs" USING btree ("version_seq");--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_versions_open_key" ON "jobs" USING btree ("country","app_id") WHERE "jobs"."kind" = 'versions' and "jobs"."state" in ('queued', 'leased');--> statement-breakpoint
CREATE UNIQUE INDEX "versions_app_level_active_key" ON "versions" USING btree ("country","app_id") WHERE "versions"."app_ver_id" is null and "versions"."status" in ('Pending', 'Downloading', 'Downloaded', 'Process');