CREATE SEQUENCE "public"."sign_claim_turns" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
ALTER TABLE "sign_requests" ADD COLUMN "claim_turn" bigint;--> statement-breakpoint
CREATE INDEX "sign_requests_turn_idx" ON "sign_requests" USING btree ("user_id","claim_turn");