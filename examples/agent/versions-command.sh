#!/bin/sh
# An operator --versions-command for sideport-agent (docs/agent-protocol.md), annotated.
#
# Run when someone opens Downgrade on an app whose version history Sideport does not have (or has
# had for longer than CATALOG_CACHE_MINUTES). It gets exactly SIDEPORT_COUNTRY (lowercase),
# SIDEPORT_APP_ID and SIDEPORT_BUNDLE_ID, and prints the app's store versions, ONE JSON OBJECT
# PER LINE, NEWEST FIRST:
#
#   {"app_ver_id": 853372310, "version": "17.2.1"}
#   {"app_ver_id": 852900112, "version": "17.2"}
#
# Other lines are only logged. Exit 0 sends the list; any other exit is a failed attempt, with
# the last stderr line as the reason. Sideport contains no store client: YOUR TOOL goes below.
set -eu

country="$SIDEPORT_COUNTRY"
app_id="$SIDEPORT_APP_ID"
bundle_id="$SIDEPORT_BUNDLE_ID"
echo "listing the versions of $bundle_id ($app_id) in the $country store"

# ---- YOUR TOOL HERE ---------------------------------------------------------------------------
# With a made-up tool that prints "<id> <version>" pairs, newest first:
#
#   my-tool versions --country "$country" --app "$app_id" |
#     while read -r id number; do printf '{"app_ver_id": %s, "version": "%s"}\n' "$id" "$number"; done
#
echo "examples/agent/versions-command.sh has no tool yet: fill in its YOUR TOOL HERE part." >&2
exit 1
