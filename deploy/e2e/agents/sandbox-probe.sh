#!/bin/bash
# The agent of the sandbox-boundary test: it looks around as a curious agent would. It speaks just
# enough of Claude Code's stream-json for the sidecar: each finding is an `assistant` line; then it
# asks for a tool (a `control_request`) and reports the decision it reads on stdin.
# PROBE_TARGETS: "name=host:port …", the addresses it must not reach directly.
# PROXY_TARGETS: "name=host:port …", asked of the egress proxy (HTTPS_PROXY) with CONNECT.
# (Its key patterns are bracketed so that the script does not find itself: model keys, and the
# repository token of the test's git server.)
say() { printf '{"type":"assistant","message":{"id":"msg_probe_%s","role":"assistant","content":[{"type":"text","text":"%s"}]}}\n' "$RANDOM$RANDOM" "$1"; }
for target in $PROBE_TARGETS; do
  name=${target%%=*}; address=${target#*=}; host=${address%:*}; port=${address##*:}
  if timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then say "tcp $name open"; else say "tcp $name refused"; fi
done
# A CONNECT through the egress proxy: its status line.
connect_via_proxy() {
  local proxy=${HTTPS_PROXY#http://}
  exec 4<>"/dev/tcp/${proxy%:*}/${proxy##*:}" || { echo "no proxy"; return; }
  printf 'CONNECT %s HTTP/1.1\r\nhost: %s\r\n\r\n' "$1" "$1" >&4
  IFS= read -r -t 10 line <&4
  exec 4>&-
  echo "${line%$'\r'}"
}
for target in $PROXY_TARGETS; do
  say "proxy ${target%%=*} $(connect_via_proxy "${target#*=}")"
done
while IFS='=' read -r name value; do say "env $name=$value"; done < <(env | tr -d '"\\')
# The workspace's remote, fetched through the sidecar's git proxy (the gateway adds the credential).
git -C /workspace fetch --quiet origin 2>/dev/null; say "git fetch exit $?"
for file in $(grep -rlsa -e 'sk-[a]nt' -e 'sk-[p]roj' -e 'git-[t]oken-' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr 2>/dev/null); do say "key-like text in $file"; done
say "environ of every process: $(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c -e 'sk-[a]nt' -e 'sk-[p]roj' -e 'git-[t]oken-') key-like lines"
say "probe done"
printf '{"type":"control_request","request_id":"probe-request-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"echo probe"},"tool_use_id":"toolu_probe_1"}}\n'
while read -r line; do
  case "$line" in
    *probe-request-1*allow*) say "decision allow"; break ;;
    *probe-request-1*deny*) say "decision deny"; break ;;
  esac
done
printf '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"duration_ms":1,"total_cost_usd":0,"usage":{}}\n'
