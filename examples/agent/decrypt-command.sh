#!/bin/sh
# An operator command for sideport-agent: the contract of docs/agent-protocol.md, annotated.
#
#   SIDEPORT_AGENT_TOKEN=<token> npx sideport-agent --server https://sideport.example \
#     --command '/opt/sideport/decrypt-command.sh' \
#     --versions-command '/opt/sideport/versions-command.sh'
#
# sideport-agent runs this once per decrypt job, in a fresh folder (the current directory; empty
# but for the agent's hidden .sideport-agent marker), in a process group of its own: if the server
# takes the job back, or the agent is stopped, the whole group gets SIGTERM (then SIGKILL 5 s
# later), your tool's children included.
#
# Sideport contains no decryption code and this script contains none either. The one part that
# does the work is YOUR TOOL, below: replace the placeholder with the tool you use, on your own
# device, for apps you may decrypt.
set -eu

# ---- 1. The job ------------------------------------------------------------------------------
# Every variable is set; the two version variables may be empty. The agent passes its own
# environment through (PATH, HOME, ...) but none of its own SIDEPORT_ variables: the token stays
# with the agent.
job_id="$SIDEPORT_JOB_ID"         # e.g. 42-1: the job and its attempt (for your logs)
country="$SIDEPORT_COUNTRY"       # lowercase store country: kr, us, de, ...
app_id="$SIDEPORT_APP_ID"         # the store's app id (iTunes trackId)
bundle_id="$SIDEPORT_BUNDLE_ID"   # the app's bundle id: the IPA must be exactly this app
app_ver_id="$SIDEPORT_APP_VER_ID" # the store's version id; EMPTY means the current store version
version="$SIDEPORT_VERSION"       # that version's number when known, else empty
output="$SIDEPORT_OUTPUT"         # absolute path: write the decrypted IPA exactly here

# ---- 2. Lines on stdout ------------------------------------------------------------------------
# These four forms are sent to the server (people watching the queue see them at once); any
# other line is only written to the agent's log. stderr is logged too, and its LAST line is the
# reason shown if this command fails (see 4. below).
#   status Downloading | status Downloaded | status Process
#   progress N          (0-100)
#   app_ver_id N        (the store version id you fetched: needed when $app_ver_id is empty,
#                        unless the IPA carries the store's iTunesMetadata.plist, which says it)
#   version X           (its version number, e.g. 17.2.1)
echo "job $job_id: $bundle_id ($app_id) in the $country store, version ${app_ver_id:-current}"
echo "status Downloading"

# ---- 3. YOUR TOOL HERE -----------------------------------------------------------------------
# Fetch the app with your own account and device, decrypt it with your own tool, write the IPA
# to "$output", and print progress as you go. The shape, with a made-up tool name:
#
#   my-tool fetch --country "$country" --app "$app_id" ${app_ver_id:+--version "$app_ver_id"} \
#       --out fetched.ipa --print-version-id > fetched.id
#   echo "progress 50"
#   echo "app_ver_id $(cat fetched.id)"
#   echo "status Downloaded"
#   echo "status Process"
#   my-tool decrypt fetched.ipa --out "$output"
#   echo "progress 100"
#
# Until it is filled in, every job fails here with this reason (and is retried, then Not):
echo "examples/agent/decrypt-command.sh has no tool yet: fill in its YOUR TOOL HERE part." >&2
exit 1
# ---- end of YOUR TOOL HERE --------------------------------------------------------------------

# ---- 4. Exit codes (what the agent does with them) ---------------------------------------------
#   exit 0  the IPA is at "$output": the agent checks it (one app, $bundle_id, every Mach-O
#           decrypted: cryptid 0) and uploads it; a file that fails the check is not uploaded.
#   exit 3  this app cannot be done (say, it needs a newer iOS than your device runs): the entry
#           becomes Not at once, with the last stderr line as the reason, e.g.
#             echo "This app needs iOS 17; the device runs 16.7." >&2; exit 3
#   other   a failed attempt: the job goes back to the queue and is retried (DECRYPT_MAX_ATTEMPTS
#           in all), the last stderr line recorded as the reason.
