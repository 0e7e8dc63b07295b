#!/bin/sh
# An agent that is not TypeScript, in its plainest form: POSIX sh and curl against Strata's REST
# surface (/api/v1, described by /api/v1/openapi.json). It stores a file's bytes, checkpoints a
# work context whose manifest names them, reads the checkpoint back, acquires a workspace for the
# work context, and makes three mistakes. rest-curl.test.ts runs it against a real server and
# compares every answer with the tRPC route's; each answer's body goes to $OUT/NAME.json and its
# HTTP status to $OUT/NAME.status.
#
# Environment: STRATA_URL (http://host:port), STRATA_TOKEN (an agent token), OUT (a directory),
# REPOSITORY (a repository identity), WORK_CONTEXT (a work context id), APPEND_KEY and
# ACQUIRE_KEY (idempotency keys: a new random one per logical call).
set -eu
: "${STRATA_URL:?}" "${STRATA_TOKEN:?}" "${OUT:?}" "${REPOSITORY:?}" "${WORK_CONTEXT:?}"
: "${APPEND_KEY:?}" "${ACQUIRE_KEY:?}"

api="$STRATA_URL/api/v1"
auth="Authorization: Bearer $STRATA_TOKEN"
json="Content-Type: application/json"
image="sha256:$(printf 'base image' | sha256sum | cut -d' ' -f1)"

# call NAME METHOD URL [curl options…]
call() {
  name=$1 method=$2 url=$3
  shift 3
  curl -sS -X "$method" -o "$OUT/$name.json" -w '%{http_code}' "$@" "$url" >"$OUT/$name.status"
}

# The document describing every operation below (no token needed).
call openapi GET "$api/openapi.json"

# A file's bytes, stored once by their sha256 (blobs are bytes, not JSON: PUT /api/blobs/<sha256>).
printf 'hello from a plain REST client\n' >"$OUT/file.txt"
digest=$(sha256sum "$OUT/file.txt" | cut -d' ' -f1)
call blob PUT "$STRATA_URL/api/blobs/$digest" -H "$auth" -H "Content-Type: application/octet-stream" \
  --data-binary "@$OUT/file.txt"

# A checkpoint: its lineage key and a manifest naming the blob (a mutation: POST, a JSON body, and
# an Idempotency-Key so a retry after a lost answer does not append twice).
head=$(printf 'commit' | sha1sum | cut -d' ' -f1)
tree=$(printf 'tree' | sha1sum | cut -d' ' -f1)
cat >"$OUT/append-input.json" <<EOF
{
  "key": {
    "repository": { "identity": "$REPOSITORY" },
    "backendKind": "modal",
    "baseImage": "$image",
    "workContextId": "$WORK_CONTEXT"
  },
  "observedHeadId": null,
  "manifest": { "treeId": "$tree", "head": "$head", "branch": null, "blobDigests": ["$digest"], "sizeBytes": 31 }
}
EOF
call append POST "$api/checkpoint/append" -H "$auth" -H "$json" -H "Idempotency-Key: $APPEND_KEY" \
  --data-binary "@$OUT/append-input.json"
snapshot=$(sed -n 's/.*"snapshot":{"id":"\([^"]*\)".*/\1/p' "$OUT/append.json")
printf '%s' "$snapshot" >"$OUT/snapshot-id.txt"

# Read it back (a query: GET, its fields as query parameters).
call get GET "$api/snapshot/get?snapshotId=$snapshot&includeRetired=false" -H "$auth"

# Acquire a workspace for the same work context: the plan restores the checkpoint just made.
cat >"$OUT/acquire-input.json" <<EOF
{
  "repository": { "identity": "$REPOSITORY" },
  "backendKind": "modal",
  "baseImage": "$image",
  "canonicalRef": "main",
  "workContextId": "$WORK_CONTEXT",
  "workspace": "/home/dev/workspaces/$WORK_CONTEXT",
  "host": "runner-1"
}
EOF
call acquire POST "$api/workspace/acquire" -H "$auth" -H "$json" -H "Idempotency-Key: $ACQUIRE_KEY" \
  --data-binary "@$OUT/acquire-input.json"

# Mistakes, each answered with a typed error: a bad token, a misspelt field, a route that is not there.
call bad-token POST "$api/checkpoint/append" -H "Authorization: Bearer strata_wrong" -H "$json" \
  --data-binary "@$OUT/append-input.json"
sed 's/"observedHeadId"/"observedHead"/' "$OUT/append-input.json" >"$OUT/bad-input.json"
call bad-input POST "$api/checkpoint/append" -H "$auth" -H "$json" --data-binary "@$OUT/bad-input.json"
call unknown GET "$api/checkpoint/rewind" -H "$auth"
