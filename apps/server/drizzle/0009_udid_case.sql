-- UDIDs are kept in one letter case, upper (src/modules/devices/udid.ts). A device enrolled twice in
-- two cases was two rows, each payable: they become one. The row kept is the furthest along
-- (Registered, Process, Pending, Expired, then Add; then the latest expiry; then the oldest); it
-- takes every registration year paid for any of them, the latest expiry and registration, and
-- the payments and open test-mode checkouts that named the others.
CREATE TEMPORARY TABLE "udid_merge" AS
SELECT "id" AS "loser", "survivor"
FROM (
  SELECT "id", first_value("id") OVER (
    PARTITION BY "user_id", upper("udid")
    ORDER BY
      CASE "status" WHEN 'Registered' THEN 0 WHEN 'Process' THEN 1 WHEN 'Pending' THEN 2 WHEN 'Expired' THEN 3 ELSE 4 END,
      "expires_at" DESC NULLS LAST,
      "id"
  ) AS "survivor"
  FROM "devices"
) AS "ranked"
WHERE "id" <> "survivor";
--> statement-breakpoint
UPDATE "devices" AS "kept"
SET
  "paid_years" = "merged"."paid_years",
  "expires_at" = "merged"."expires_at",
  "registered_at" = "merged"."registered_at",
  "apple_device_id" = coalesce("kept"."apple_device_id", "merged"."apple_device_id"),
  "device_name" = coalesce("kept"."device_name", "merged"."device_name"),
  -- Years paid for a merged row wait for registration, as a payment would leave them.
  "status" = CASE
    WHEN "merged"."paid_years" > "kept"."paid_years" AND "kept"."status" IN ('Registered', 'Expired', 'Add') THEN 'Pending'
    ELSE "kept"."status"
  END
FROM (
  SELECT
    "m"."survivor",
    sum("d"."paid_years")::integer AS "paid_years",
    max("d"."expires_at") AS "expires_at",
    max("d"."registered_at") AS "registered_at",
    max("d"."apple_device_id") AS "apple_device_id",
    max("d"."device_name") AS "device_name"
  FROM (SELECT DISTINCT "survivor" FROM "udid_merge") AS "m"
  JOIN "devices" AS "d"
    ON "d"."id" = "m"."survivor" OR "d"."id" IN (SELECT "loser" FROM "udid_merge" WHERE "survivor" = "m"."survivor")
  GROUP BY "m"."survivor"
) AS "merged"
WHERE "kept"."id" = "merged"."survivor";
--> statement-breakpoint
UPDATE "payments" AS "p"
SET "item" = 'device:' || "m"."survivor"
FROM "udid_merge" AS "m"
WHERE "p"."item" = 'device:' || "m"."loser";
--> statement-breakpoint
UPDATE "dev_checkouts" AS "c"
SET "item" = jsonb_set("c"."item", '{deviceId}', to_jsonb("m"."survivor"))
FROM "udid_merge" AS "m"
WHERE "c"."item" ->> 'kind' = 'device' AND "c"."item" ->> 'deviceId' = "m"."loser"::text;
--> statement-breakpoint
DELETE FROM "devices" WHERE "id" IN (SELECT "loser" FROM "udid_merge");
--> statement-breakpoint
DROP TABLE "udid_merge";
--> statement-breakpoint
UPDATE "devices" SET "udid" = upper("udid") WHERE "udid" <> upper("udid");
--> statement-breakpoint
-- The UDIDs a profile and an artifact list, in the same case (a profile's, sorted as JavaScript sorts).
UPDATE "user_profiles"
SET "udids" = coalesce(
  (SELECT jsonb_agg(DISTINCT upper("u") COLLATE "C" ORDER BY upper("u") COLLATE "C") FROM jsonb_array_elements_text("udids") AS "u"),
  '[]'::jsonb
)
WHERE "udids"::text <> upper("udids"::text);
--> statement-breakpoint
UPDATE "sign_requests"
SET "udids" = coalesce(
  (SELECT jsonb_agg(DISTINCT upper("u") COLLATE "C" ORDER BY upper("u") COLLATE "C") FROM jsonb_array_elements_text("udids") AS "u"),
  '[]'::jsonb
)
WHERE "udids" IS NOT NULL AND "udids"::text <> upper("udids"::text);
