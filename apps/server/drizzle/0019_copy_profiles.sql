CREATE TABLE "copy_profiles" (
	"user_id" text NOT NULL,
	"bundle_id" text NOT NULL,
	"capability_types" jsonb NOT NULL,
	"profile" text NOT NULL,
	"uuid" text NOT NULL,
	"udids" jsonb NOT NULL,
	"apple_profile_id" text,
	"account_id" bigint,
	"certificate_fingerprint" text,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "copy_profiles_user_id_bundle_id_pk" PRIMARY KEY("user_id","bundle_id")
);
--> statement-breakpoint
ALTER TABLE "copy_profiles" ADD CONSTRAINT "copy_profiles_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
ALTER TABLE "copy_profiles" ADD CONSTRAINT "copy_profiles_account_id_developer_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."developer_accounts"("id") ON DELETE set null ON UPDATE no action;