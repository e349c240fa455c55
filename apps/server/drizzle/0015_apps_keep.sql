CREATE TABLE "version_components" (
	"app_id" bigint NOT NULL,
	"app_ver_id" bigint NOT NULL,
	"components" jsonb NOT NULL,
	"read_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "version_components_app_id_app_ver_id_pk" PRIMARY KEY("app_id","app_ver_id")
);
--> statement-breakpoint
CREATE TABLE "team_moves" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"from_account_id" bigint,
	"to_account_id" bigint NOT NULL,
	"from_team" text,
	"to_team" text,
	"reason" text NOT NULL,
	"moved_at" timestamp with time zone NOT NULL,
	"acknowledged_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "team_moves" ADD CONSTRAINT "team_moves_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
CREATE INDEX "team_moves_user_idx" ON "team_moves" USING btree ("user_id","moved_at");