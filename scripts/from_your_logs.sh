#!/usr/bin/env bash
# README's "From your logs", end to end on the bundled models, with specmeter's own tools only:
#   serve --log → load (each prompt's category sent as metadata.domain) → golden from the log → bench on that
#   golden set → monitor --requests --once (per-domain windows) → drift against the bench run (per domain).
# Run from anywhere with `specmeter` on PATH; everything is written into $OUT (default ./from-your-logs) and
# the runs are recorded in $OUT/runs.sqlite. The server runs in the background and is always stopped.
# Sizes: LIMIT requests per golden set (README: 40), MAX_TOKENS (README: 48), N golden prompts per domain;
# the smoke size the doc test runs is LIMIT=6 MAX_TOKENS=12 N=2 (tests/docs/test_doc_commands.py).
set -euo pipefail

OUT=${OUT:-from-your-logs}
LIMIT=${LIMIT:-40}
MAX_TOKENS=${MAX_TOKENS:-48}
N=${N:-10}
PORT=${PORT:-8765}
MIN_REQUESTS=${MIN_REQUESTS:-20}
mkdir -p "$OUT"
cd "$OUT"
export SPECMETER_STORE=${SPECMETER_STORE:-$PWD/runs.sqlite}
rm -f requests.jsonl

# 1. Log every request with its domain: `serve --log` writes the domain the request's metadata names.
specmeter serve --target bundled:target --draft bundled:draft-legal --k 4 --port "$PORT" \
    --log requests.jsonl --log-prompts --log-output > serve.out 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { cat serve.out; exit 1; }
    sleep 0.5
done

# 2. Traffic with domains: `load` sends each golden-set prompt's category as the request's metadata.domain.
for domain in legal general; do
    specmeter load --endpoint "http://127.0.0.1:$PORT" --prompts "bundled:$domain" --limit "$LIMIT" \
        --max-tokens "$MAX_TOKENS" --concurrency 1 --json "load-$domain.json"
done
kill "$server"
wait "$server" 2>/dev/null || true
trap - EXIT

# 3. A golden set from the log: its categories are the served requests' domains.
specmeter golden --from requests.jsonl --n "$N" --seed 1 --out golden.jsonl --json golden-report.json

# 4. Which draft, which k, per domain: the bundled drafts on the golden set from the log.
specmeter bench --target bundled:target --draft bundled:draft-legal --k 4 --prompts golden.jsonl \
    --max-tokens "$MAX_TOKENS" --json bench.json

# 5. Production: one window per domain over the whole log, with intervals (without --once: follows the log).
specmeter monitor --requests requests.jsonl --interval 1d --once --history monitor.sqlite --json windows.json

# 6. Has acceptance moved against the bench run? Per domain, request-level test (exit 1 on a drop).
specmeter drift --requests requests.jsonl --reference latest --slot draft-legal@k=4 \
    --min-requests "$MIN_REQUESTS" --json drift.json

# 7. What the served draft, n-gram lookups and suffix decoding accept on the same log, without the target
#    running (the draft's figures equal what serve logged: README's "Replay").
specmeter replay --from requests.jsonl --target bundled:target --method bundled:draft-legal --method ngram \
    --method suffix --k 4 --no-store --json replay.json

# The replayed methods × k ranked per domain (acceptance only: no cost surface here).
specmeter select --from replay.json --json select.json --quiet
