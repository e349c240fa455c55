CREATE TABLE "developer_accounts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"key_id" text NOT NULL,
	"issuer_id" text NOT NULL,
	"name" text NOT NULL,
	"source" text NOT NULL,
	"sealed_private_key" text,
	"state" text DEFAULT 'enabled' NOT NULL,
	"state_reason" text,
	"state_changed_at" timestamp with time zone,
	"membership_renews_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "developer_accounts_key_id_unique" UNIQUE("key_id"),
	CONSTRAINT "developer_accounts_issuer_id_unique" UNIQUE("issuer_id")
);
--> statement-breakpoint
CREATE TABLE "device_slots" (
	"account_id" bigint NOT NULL,
	"udid" text NOT NULL,
	"family" text NOT NULL,
	"user_id" text,
	"registered_at" timestamp with time zone NOT NULL,
	CONSTRAINT "device_slots_account_id_udid_pk" PRIMARY KEY("account_id","udid")
);
--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "account_id" bigint;--> statement-breakpoint
ALTER TABLE "user_profiles" ADD COLUMN "account_id" bigint;--> statement-breakpoint
ALTER TABLE "device_slots" ADD CONSTRAINT "device_slots_account_id_developer_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."developer_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_slots" ADD CONSTRAINT "device_slots_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE cascade;--> statement-breakpoint
CREATE INDEX "device_slots_family_idx" ON "device_slots" USING btree ("account_id","family","registered_at");--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_account_id_developer_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."developer_accounts"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_profiles" ADD CONSTRAINT "user_profiles_account_id_developer_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."developer_accounts"("id") ON DELETE set null ON UPDATE no action;