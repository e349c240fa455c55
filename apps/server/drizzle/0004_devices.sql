CREATE TABLE "user_profiles" (
	"user_id" text PRIMARY KEY NOT NULL,
	"profile" text NOT NULL,
	"uuid" text NOT NULL,
	"udids" jsonb NOT NULL,
	"apple_profile_id" text,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "platform" text DEFAULT 'IOS' NOT NULL;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "registered_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "reason" text;--> statement-breakpoint
ALTER TABLE "user_profiles" ADD CONSTRAINT "user_profiles_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE cascade;