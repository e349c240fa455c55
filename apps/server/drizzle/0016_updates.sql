CREATE TABLE "app_updates" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"app_id" bigint NOT NULL,
	"sign_type" integer NOT NULL,
	"country" text NOT NULL,
	"from_app_ver_id" bigint NOT NULL,
	"from_bundle_id" text,
	"from_cert_fingerprint" text,
	"to_version" text NOT NULL,
	"to_app_ver_id" bigint,
	"state" text NOT NULL,
	"automatic" boolean DEFAULT false NOT NULL,
	"in_place" boolean DEFAULT true NOT NULL,
	"reason" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "auto_update_days" (
	"day" date PRIMARY KEY NOT NULL,
	"started" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "auto_updates" (
	"user_id" text NOT NULL,
	"app_id" bigint NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "auto_updates_user_id_app_id_pk" PRIMARY KEY("user_id","app_id")
);
--> statement-breakpoint
CREATE TABLE "store_checks" (
	"country" text NOT NULL,
	"app_id" bigint NOT NULL,
	"version" text,
	"checked_at" timestamp with time zone,
	"changed_at" timestamp with time zone,
	CONSTRAINT "store_checks_country_app_id_pk" PRIMARY KEY("country","app_id")
);
--> statement-breakpoint
ALTER TABLE "app_updates" ADD CONSTRAINT "app_updates_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
ALTER TABLE "auto_updates" ADD CONSTRAINT "auto_updates_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
CREATE UNIQUE INDEX "app_updates_key" ON "app_updates" USING btree ("user_id","app_id","sign_type");--> statement-breakpoint
CREATE INDEX "app_updates_open_idx" ON "app_updates" USING btree ("app_id") WHERE "app_updates"."state" in ('Decrypting', 'Signing');--> statement-breakpoint
CREATE INDEX "store_checks_due_idx" ON "store_checks" USING btree ("checked_at");