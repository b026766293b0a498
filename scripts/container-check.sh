#!/usr/bin/env bash
# Checks the container image definition on a host without a Docker engine (CI):
# lints the Dockerfile (dockerfilelint, .dockerfilelintrc); builds the context
# `docker build .` would send from a clean clone plus uncommitted changes
# (`git ls-files`, tracked and untracked-not-ignored, minus .dockerignore);
# replays the Dockerfile, one temporary directory per stage (its WORKDIR): the
# COPY instructions (from the context or --from a stage) and the `RUN npm ...`
# steps; other RUN steps (apt-get, /data ownership) make sense only in an image
# and are listed as skipped. Then it starts the final stage's CMD as an
# unprivileged user (as root: nobody, through setpriv, no capabilities) with the
# final stage's ENV except HOST=127.0.0.1, a free PORT, DATA_DIR and a generated
# PLANT_STORE_TOKENS_FILE in temporary directories; runs the HEALTHCHECK command
# verbatim (same user, environment, directory); POSTs /plants without (401) and
# with (200) the token; checks the process's uid and capabilities; sends SIGTERM
# and expects exit status 0 within SHUTDOWN_GRACE_MS + 2 s.
#
# The host's Node runs it (not the image's) and native addons compile for it.
# Needs bash 5, git, node, npm, tar, coreutils, util-linux (setpriv, as root),
# and node-gyp's python3, make, g++ when no prebuilt addon can be downloaded.
# Usage: scripts/container-check.sh   (exit status 0 = PASS; temporary files and
# processes are removed on exit, also on failure or interruption).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/plant-store-container-check.XXXXXX")
chmod 0755 "$work" # the unprivileged user must reach the runtime stage's files
log="$work/server.log" server_pid='' timings=() step_name='' step_start=$EPOCHREALTIME script_start=$EPOCHREALTIME

step() { # step [NAME]: ends the previous step's timing; starts one named NAME, if given
  local now=$EPOCHREALTIME
  [[ -z $step_name ]] || timings+=("$(printf '%8.1f s  %s' "$(bc_sub "$now" "$step_start")" "$step_name")")
  step_name=${1:-} step_start=$now
  [[ -z $step_name ]] || echo "== $step_name"
}
bc_sub() { awk -v a="$1" -v b="$2" 'BEGIN { print a - b }'; }
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*" >&2
  if [[ -s $log ]]; then echo "--- last lines of the service log:" >&2; tail -n 40 "$log" >&2; fi
  exit 1
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  step cleanup
  rm -rf "$work"
  step
  echo "== timings"; printf '%s\n' "${timings[@]}"
  printf '%8.1f s  total\n' "$(bc_sub "$EPOCHREALTIME" "$script_start")"
  if ((status == 0)); then echo "container-check: PASS"; else echo "container-check: FAIL (exit $status)"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$repo"
[[ -f Dockerfile && -f .dockerignore ]] || fail "Dockerfile and .dockerignore expected in $repo"

step "lint: dockerfilelint Dockerfile"
[[ -x node_modules/.bin/dockerfilelint ]] || fail "dockerfilelint not installed: run npm ci first"
node_modules/.bin/dockerfilelint Dockerfile || fail "dockerfilelint reported issues"
pass "dockerfilelint: no issues"

step "build context: git ls-files minus .dockerignore"
context="$work/context" && mkdir "$context"
{
  comm -z -23 <(git ls-files -z --cached | sort -zu) \
    <(git ls-files -z --cached --ignored --exclude-from=.dockerignore | sort -zu)
  git ls-files -z --others --exclude-standard --exclude-from=.dockerignore
} | while IFS= read -r -d '' file; do if [[ -e $file ]]; then printf '%s\0' "$file"; fi; done \
  | tar --null --files-from=- -cf - | tar -xf - -C "$context"
pass "build context: $(find "$context" -type f | wc -l) files"

# --- The Dockerfile, replayed: each instruction becomes a call `df KEYWORD ARG...`,
# read twice: first only recorded and checked (fast), then carried out (replay=1).
reset_state() {
  declare -gA stage_dir=() stage_env=()
  stage='' workdir='' final_base='' final_user='' expose='' hc_timeout=30 hc_stage='' hc_cmd=() cmd=() skipped=()
}
df() {
  local keyword=$1
  shift
  case $keyword in
    FROM) df_from "$@" ;;
    WORKDIR) [[ -z $workdir || $workdir == "$1" ]] || fail "every stage must use one WORKDIR ($workdir), not $1"
      workdir=$1 ;;
    COPY) df_copy "$@" ;;
    RUN) df_run "$1" ;;
    ENV) for pair in "$@"; do
        [[ $pair =~ ^[A-Za-z_][A-Za-z0-9_]*=[^\"\'\$]*$ ]] || fail "unsupported ENV form: $pair (use KEY=value)"
        stage_env[$stage]+="$pair"$'\n'
      done ;;
    USER) final_user=$1 ;;
    EXPOSE) expose=$1 ;;
    HEALTHCHECK) df_healthcheck "$@" ;;
    CMD) cmd=("$@") ;;
    LABEL | VOLUME | ARG | STOPSIGNAL) ;;
    *) fail "Dockerfile instruction $keyword is not supported by container-check" ;;
  esac
}
df_from() { # FROM image-or-stage [AS name]
  local base=$1 name=${3:-stage${#stage_dir[@]}}
  stage=${name,,}
  if [[ -n ${stage_dir[$base]:-} ]]; then
    stage_env[$stage]=${stage_env[$base]}
    ((replay)) && cp -a "${stage_dir[$base]}" "$work/stage-$stage"
  else
    # missing_tag, stage-aware (dockerfilelint 1.8 reads stage names as images).
    [[ $base =~ ^[^:@$]+(:[A-Za-z0-9_.-]+|@sha256:[0-9a-f]{64})$ && $base != *:latest ]] ||
      fail "FROM $base: base images need an explicit tag other than latest"
    stage_env[$stage]=''
    ((replay)) && mkdir "$work/stage-$stage"
  fi
  stage_dir[$stage]="$work/stage-$stage" final_base=$base
  ((replay)) && echo "   stage $stage (from $base)"
  return 0
}
in_stage() { # in_stage DIR PATH: PATH (absolute under WORKDIR, or relative) inside DIR
  case $2 in
    "$workdir") echo "$1" ;;
    "$workdir"/*) echo "$1/${2#"$workdir"/}" ;;
    /*) fail "path $2 is outside WORKDIR $workdir" ;;
    *) echo "$1/$2" ;;
  esac
}
df_copy() { # COPY [--from=stage] [--chown=..] src... dest
  ((replay)) || return 0
  local from='' words=()
  for word in "$@"; do
    case $word in --from=*) from=${word#--from=} ;; --*) ;; *) words+=("$word") ;; esac
  done
  local dest_arg=${words[-1]} dest src path
  dest=$(in_stage "${stage_dir[$stage]}" "$dest_arg")
  for src in "${words[@]:0:${#words[@]}-1}"; do
    if [[ -n $from ]]; then
      [[ -n ${stage_dir[$from]:-} ]] || fail "COPY --from=$from: no such stage"
      path=$(in_stage "${stage_dir[$from]}" "$src")
    else
      path="$context/$src"
    fi
    [[ -e $path ]] || fail "COPY ${from:+--from=$from }$src: not there (not in git, or excluded by .dockerignore?)"
    if [[ -d $path ]]; then mkdir -p "$dest" && cp -a "$path/." "$dest/"
    elif [[ $dest_arg == */ || ${#words[@]} -gt 2 ]]; then mkdir -p "$dest" && cp -a "$path" "$dest/"
    else mkdir -p "$(dirname "$dest")" && cp -a "$path" "$dest"; fi
  done
}
df_run() {
  if [[ $1 != npm\ * ]]; then skipped+=("$stage: $1"); return; fi
  ((replay)) || return 0
  step "$stage: $1"
  local env_pairs=()
  mapfile -t env_pairs < <(printf '%s' "${stage_env[$stage]}")
  (cd "${stage_dir[$stage]}" && env "${env_pairs[@]}" timeout 900 bash -c "$1") || fail "$stage: $1"
  pass "$stage: $1"
}
df_healthcheck() { # HEALTHCHECK [--option=value]... CMD exec-form-words
  while [[ $1 != CMD ]]; do [[ $1 != --timeout=* ]] || hc_timeout=${1#--timeout=}; shift; done
  shift && hc_cmd=("$@") hc_stage=$stage
}

step "read Dockerfile"
node --input-type=module - "$repo/Dockerfile" >"$work/dockerfile.sh" <<'EOF' || fail "cannot read the Dockerfile"
import { readFileSync } from 'node:fs'
const quote = (word) => `'${String(word).replaceAll("'", "'\\''")}'`
const execForm = (text) => {
  if (!text.trim().startsWith('[')) throw new Error(`exec form (JSON array) required, not: ${text}`)
  return JSON.parse(text)
}
process.on('uncaughtException', (error) => { console.error(`Dockerfile: ${error.message}`); process.exit(1) })
let pending = ''
for (const raw of readFileSync(process.argv[2], 'utf8').split(/\r?\n/)) {
  const line = raw.trim()
  if (line.startsWith('#')) continue
  if (line.endsWith('\\')) { pending += `${line.slice(0, -1)} `; continue }
  const text = `${pending}${line}`.trim()
  pending = ''
  if (text === '') continue
  const [, word, rest] = /^(\S+)\s*([\s\S]*)$/.exec(text)
  const keyword = word.toUpperCase()
  let args = rest.split(/\s+/).filter(Boolean)
  if (keyword === 'RUN') args = [rest]
  else if (keyword === 'LABEL') args = []
  else if (keyword === 'CMD' || keyword === 'ENTRYPOINT') args = execForm(rest)
  else if (keyword === 'HEALTHCHECK') {
    const [, options, command] = /^(.*?)\bCMD\s+([\s\S]*)$/.exec(rest) ?? []
    if (command === undefined) throw new Error(`HEALTHCHECK without CMD: ${rest}`)
    args = [...options.split(/\s+/).filter(Boolean), 'CMD', ...execForm(command)]
  }
  console.log(['df', keyword, ...args.map(quote)].join(' '))
}
EOF
replay=0 && reset_state
# shellcheck source=/dev/null
source "$work/dockerfile.sh"
[[ -z ${stage_dir[$final_base]:-} ]] || fail "the final stage must start from a base image, not stage $final_base (no toolchain at run time)"
[[ -n $final_user && $final_user != root && $final_user != 0 && $final_user != 0:* ]] || fail "the final stage must set a non-root USER"
[[ ${#cmd[@]} -gt 0 && ${cmd[0]} == node ]] || fail "CMD must run node directly (exec form), not: ${cmd[*]}"
[[ ${#hc_cmd[@]} -gt 0 && $hc_stage == "$stage" ]] || fail "the final stage needs a HEALTHCHECK"
declare -A image_env=()
while IFS='=' read -r key value; do [[ -z $key ]] || image_env[$key]=$value; done <<<"${stage_env[$stage]}"
[[ ${image_env[NODE_ENV]:-} == production ]] || fail "the final stage must set NODE_ENV=production"
[[ $expose == "${image_env[PORT]:-}" ]] || fail "EXPOSE $expose differs from ENV PORT=${image_env[PORT]:-}"
pass "Dockerfile: runtime stage from $final_base, USER $final_user, CMD ${cmd[*]}, HEALTHCHECK ${hc_cmd[*]}"
replay=1 && reset_state
# shellcheck source=/dev/null
source "$work/dockerfile.sh"
runtime_dir=${stage_dir[$stage]}
((${#skipped[@]} == 0)) || printf '   skipped (image only): %s\n' "${skipped[@]}"

step "start: ${cmd[*]} as an unprivileged user"
if ((EUID == 0)); then
  uid=$(id -u nobody) gid=$(id -g nobody)
  as_user=(setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs)
else
  uid=$EUID gid=$(id -g)
  as_user=()
fi
mkdir -m 0700 "$work/data" "$work/secrets"
node -e 'process.stdout.write(require("node:crypto").randomBytes(32).toString("base64url"))' >"$work/secrets/plant_store_tokens"
chmod 0400 "$work/secrets/plant_store_tokens"
chown "$uid:$gid" "$work/data" "$work/secrets" "$work/secrets/plant_store_tokens"
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
image_env[HOST]=127.0.0.1 image_env[PORT]=$port image_env[DATA_DIR]="$work/data"
image_env[PLANT_STORE_TOKENS_FILE]="$work/secrets/plant_store_tokens"
run_env=(env -i "PATH=$PATH")
for key in "${!image_env[@]}"; do run_env+=("$key=${image_env[$key]}"); done
(cd "$runtime_dir" && exec "${as_user[@]}" "${run_env[@]}" "${cmd[@]}") >"$log" 2>&1 &
server_pid=$!
for ((i = 0; i < 300; i++)); do # up to 30 s
  kill -0 "$server_pid" 2>/dev/null || fail "the service exited during start-up"
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
((i < 300)) || fail "the service did not listen on 127.0.0.1:$port within 30 s"
pass "listening on 127.0.0.1:$port (pid $server_pid)"

step "health check: ${hc_cmd[*]}"
(cd "$runtime_dir" && timeout "$hc_timeout" "${as_user[@]}" "${run_env[@]}" "${hc_cmd[@]}") || fail "HEALTHCHECK failed: ${hc_cmd[*]}"
pass "HEALTHCHECK exits 0"

step "requests: POST /plants"
timeout 15 node --input-type=module - "http://127.0.0.1:$port/plants" "$work/secrets/plant_store_tokens" <<'EOF' || fail "POST /plants"
import { readFileSync } from 'node:fs'
const [url, tokenFile] = process.argv.slice(2)
const body = JSON.stringify({ id: Date.now(), name: 'container-check', tag: 'smoke' })
const post = (headers) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal: AbortSignal.timeout(5000) })
const anonymous = await post({})
if (anonymous.status !== 401) throw new Error(`without a token: status ${anonymous.status}, expected 401`)
const response = await post({ authorization: `Bearer ${readFileSync(tokenFile, 'utf8').trim()}` })
const text = await response.text()
if (response.status !== 200 || JSON.parse(text).name !== 'container-check') throw new Error(`with the token: status ${response.status}: ${text}`)
console.log(`PASS: POST /plants: 401 without a token, 200 with it: ${text}`)
EOF

step "process: user and capabilities"
read -r _ ruid euid suid fsuid < <(grep '^Uid:' "/proc/$server_pid/status")
cap_eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$server_pid/status")
[[ $ruid == "$uid" && $euid == "$uid" && $suid == "$uid" && $fsuid == "$uid" && $uid != 0 ]] || fail "the service runs as uid $ruid/$euid, expected $uid (non-root)"
[[ $cap_eff =~ ^0+$ ]] || fail "the service has capabilities: CapEff=$cap_eff"
[[ -n $(find "$work/data" -mindepth 1 -print -quit) && -z $(find "$work/data" -mindepth 1 ! -uid "$uid" -print -quit) ]] ||
  fail "the store is not in DATA_DIR, owned by the service's user"
pass "runs as uid $uid ($(id -un "$uid")), no capabilities, store in DATA_DIR"

grace_ms=${image_env[SHUTDOWN_GRACE_MS]:-10000}
step "shutdown: SIGTERM, exit 0 within $((grace_ms + 2000)) ms"
kill -TERM "$server_pid"
for ((i = 0; i < (grace_ms + 2000) / 100; i++)); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$server_pid" 2>/dev/null && fail "still running $((grace_ms + 2000)) ms after SIGTERM"
status=0
wait "$server_pid" || status=$?
server_pid=''
((status == 0)) || fail "exit status $status after SIGTERM, expected 0"
pass "SIGTERM: exit status 0"
