CREATE SEQUENCE "public"."version_done_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "apps" (
	"country" text NOT NULL,
	"app_id" bigint NOT NULL,
	"name" text NOT NULL,
	"developer" text NOT NULL,
	"version" text NOT NULL,
	"icon_url" text NOT NULL,
	"store_url" text NOT NULL,
	"rating" double precision,
	"rating_count" integer,
	"bundle_id" text NOT NULL,
	"minimum_os" text NOT NULL,
	"size_bytes" bigint,
	"price" numeric(10, 2),
	"fetched_at" timestamp with time zone NOT NULL,
	CONSTRAINT "apps_country_app_id_pk" PRIMARY KEY("country","app_id")
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"subject" jsonb NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "blacklist" (
	"country" text NOT NULL,
	"app_id" bigint NOT NULL,
	"added_by" text,
	"added_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "blacklist_country_app_id_pk" PRIMARY KEY("country","app_id")
);
--> statement-breakpoint
CREATE TABLE "search_cache" (
	"country" text NOT NULL,
	"term" text NOT NULL,
	"app_ids" jsonb NOT NULL,
	"fetched_at" timestamp with time zone NOT NULL,
	CONSTRAINT "search_cache_country_term_pk" PRIMARY KEY("country","term")
);
--> statement-breakpoint
CREATE TABLE "versions" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"country" text NOT NULL,
	"app_id" bigint NOT NULL,
	"app_ver_id" bigint,
	"version" text,
	"status" text NOT NULL,
	"premium" boolean DEFAULT false NOT NULL,
	"requested_by" text,
	"reason" text,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"done_seq" bigint,
	"done_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "versions" ADD CONSTRAINT "versions_requested_by_users_id_fk" FOREIGN KEY ("requested_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE cascade;--> statement-breakpoint
CREATE UNIQUE INDEX "versions_app_ver_key" ON "versions" USING btree ("app_id","app_ver_id") WHERE "versions"."app_ver_id" is not null;--> statement-breakpoint
CREATE INDEX "versions_latest_idx" ON "versions" USING btree ("done_seq" DESC NULLS FIRST) WHERE "versions"."status" = 'Done';--> statement-breakpoint
CREATE INDEX "versions_queue_idx" ON "versions" USING btree ("premium" DESC NULLS FIRST,"seq") WHERE "versions"."status" in ('Pending', 'Downloading', 'Downloaded', 'Process');--> statement-breakpoint
CREATE INDEX "versions_app_idx" ON "versions" USING btree ("country","app_id");