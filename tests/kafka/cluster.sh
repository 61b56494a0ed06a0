#!/usr/bin/env bash
# cluster.sh: run real Apache Kafka (KRaft, combined broker+controller nodes)
# on 127.0.0.1 for the krabka-coord tests. See tests/kafka/README.md.
#
# Usage: cluster.sh VERB [options]
#   start           format a FRESH cluster and start it (if it already runs:
#                   print its bootstrap and exit 0; if only some nodes run,
#                   start the missing ones). Prints the PLAINTEXT bootstrap.
#   stop            SIGTERM the nodes it started (pid files), SIGKILL after a bound
#   status          print per-node state; exit 0 if all nodes run, 3 otherwise
#   env             print `export KRABKA_...=...` lines for this cluster
#   kill-node N     SIGKILL node N (crash); N may be a list (1,3)
#   start-node N    restart node N on its existing data and wait until ready;
#                   N may be a list (1,3): all are launched, then one wait
#   bootstrap       print the PLAINTEXT bootstrap address
# Options:
#   --nodes 1|3         number of nodes (default 1)
#   --sasl              add a SASL_PLAINTEXT (SCRAM-SHA-256) listener + ACLs
#   --tls               add TLS listeners from a test CA (certs.sh, in DIR/certs):
#                       SSL (+3), SASL_SSL with SCRAM-SHA-256 (+4), and MTLS (+5,
#                       SSL that requires a client certificate from the CA)
#   --extra-listeners N:ADV  N more PLAINTEXT listeners X1..XN per node (+6..+9),
#                       X<k> of node i advertised as 127.0.0.1:ADV+10*(i-1)+k-1
#                       (a fault proxy listens there: tests/kafka/faultproxy)
#   --txn-version 1|2   transaction.version feature (default 2)
#   --kafka-version V   run Apache Kafka V (fetched by fetch.sh into lib-V) instead of
#                       the default 4.1.x; below 4.0 there is no transaction.version
#                       feature (make compat runs 3.9.1 and 3.0.2)
#   --name NAME         cluster name (default from options: tv2, tv1, sasl, 3n, ...);
#                       a standard name alone implies its options (--name 3n = --nodes 3)
#   --dir DIR           state dir (default /tmp/krabka-kafka/NAME)
#   --port BASE         node i uses BASE+10*(i-1) (PLAINTEXT), +1 (CONTROLLER), +2 (SASL),
#                       +3 (SSL), +4 (SASL_SSL), +5 (MTLS), +6.. (extra listeners)
#   --owner PID         stop the cluster by itself once process PID is gone
#   --hosts H1,H2,H3    node i binds every listener to address Hi and advertises
#                       PLAINTEXT and CONTROLLER there (default 127.0.0.1)
#   --netns N1,N2,N3    node i runs inside network namespace Ni (ip netns exec;
#                       the caller creates them and gives --hosts reachable there)
#   --client-netns NS   the readiness check runs inside network namespace NS
#   --peer-proxies BASE broker-to-broker connections go through proxies the caller
#                       runs on each node's loopback (needs --netns): node i reaches
#                       node j's replication listener PEERi (+2+i-1) at
#                       127.0.0.1:BASE+10*i+j and its controller at 127.0.0.1:BASE+100+10*i+j
#                       (not with --sasl or --tls, whose ports these listeners use)
#   --timeout SECS      readiness bound (default 180, env KRABKA_KAFKA_READY_TIMEOUT)
# The options given to `start` are saved in DIR/cluster.conf; later verbs on
# the same DIR (or NAME) read them back, so `stop --name 3n` is enough.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="$here/.cache"
root_default="${KRABKA_KAFKA_ROOT:-/tmp/krabka-kafka}"

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }

verb="${1:-}"; [[ -n "$verb" ]] || die "usage: cluster.sh start|stop|status|env|kill-node N|start-node N|bootstrap [options]"
shift
node_arg=""
if [[ "$verb" == kill-node || "$verb" == start-node ]]; then
  node_arg="${1:-}"; [[ "$node_arg" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "$verb needs a node number (or a list: 1,3)"
  shift
fi

o_kv="" o_nodes="" o_sasl="" o_tls="" o_extra="" o_tv="" o_name="" o_dir="" o_port="" owner="" timeout="${KRABKA_KAFKA_READY_TIMEOUT:-180}"
o_hosts="" o_netns="" o_cnetns="" o_peer=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) o_nodes="$2"; shift 2;;
    --sasl) o_sasl=1; shift;;
    --tls) o_tls=1; shift;;
    --kafka-version) o_kv="$2"; shift 2;;
    --extra-listeners) o_extra="$2"; shift 2;;
    --txn-version) o_tv="$2"; shift 2;;
    --name) o_name="$2"; shift 2;;
    --dir) o_dir="$2"; shift 2;;
    --port) o_port="$2"; shift 2;;
    --owner) owner="$2"; shift 2;;
    --timeout) timeout="$2"; shift 2;;
    --hosts) o_hosts="$2"; shift 2;;
    --netns) o_netns="$2"; shift 2;;
    --client-netns) o_cnetns="$2"; shift 2;;
    --peer-proxies) o_peer="$2"; shift 2;;
    *) die "unknown option $1";;
  esac
done

# Name from the options when not given.
default_name() {
  local parts=()
  [[ "${1:-0}" == 1 ]] && parts+=(sasl)
  [[ "${1:-0}" != 1 && "${4:-0}" == 1 ]] && parts+=(tls)
  [[ "${2:-1}" == 3 ]] && parts+=(3n)
  [[ "${3:-2}" == 1 ]] && parts+=(tv1)
  [[ ${#parts[@]} -eq 0 ]] && parts=(tv2)
  local IFS=-; echo "${parts[*]}"
}
# A standard name given without options implies them: sasl, 3n, tv1, tv2 and
# their dash-joined combinations (e.g. sasl-3n-tv1).
# The standard "sasl" cluster carries the TLS listeners too; "tls" is TLS alone.
if [[ -n "$o_name" && -z "$o_nodes$o_sasl$o_tls$o_tv" && "$o_name" =~ ^(sasl|tls|3n|tv1|tv2)(-(3n|tv1))*$ ]]; then
  case "-$o_name-" in *-sasl-*) o_sasl=1; o_tls=1;; esac
  case "-$o_name-" in *-tls-*) o_tls=1;; esac
  case "-$o_name-" in *-3n-*) o_nodes=3;; esac
  case "-$o_name-" in *-tv1-*) o_tv=1;; esac
fi
name="${o_name:-$(default_name "${o_sasl:-0}" "${o_nodes:-1}" "${o_tv:-2}" "${o_tls:-0}")}"
dir="${o_dir:-$root_default/$name}"
conf="$dir/cluster.conf"

# Saved options (written by start) fill in what the command line left out.
KAFKA_VERSION="" NODES="" SASL="" TLS="" EXTRA="" TXN_VERSION="" PORT_BASE="" NAME=""
HOSTS="" NETNS="" CLIENT_NETNS="" PEER_PROXIES=""
if [[ "$verb" != start && -f "$conf" ]]; then
  # shellcheck disable=SC1090
  source "$conf"
fi
NODES="${o_nodes:-${NODES:-1}}"
SASL="${o_sasl:-${SASL:-0}}"
TLS="${o_tls:-${TLS:-0}}"
KAFKA_VERSION="${o_kv:-${KAFKA_VERSION:-}}"
# Releases before 4.0 have no transaction.version feature (nor --feature).
old_kafka() { [[ -n "$KAFKA_VERSION" && "${KAFKA_VERSION%%.*}" -lt 4 ]]; }
EXTRA="${o_extra:-${EXTRA:-}}"
TXN_VERSION="${o_tv:-${TXN_VERSION:-2}}"
NAME="${o_name:-${NAME:-$name}}"
HOSTS="${o_hosts:-${HOSTS:-}}"
NETNS="${o_netns:-${NETNS:-}}"
CLIENT_NETNS="${o_cnetns:-${CLIENT_NETNS:-}}"
PEER_PROXIES="${o_peer:-${PEER_PROXIES:-}}"
[[ "$NODES" == 1 || "$NODES" == 3 ]] || die "--nodes must be 1 or 3"
IFS=, read -r -a HOST_OF <<< "${HOSTS}"
IFS=, read -r -a NETNS_OF <<< "${NETNS}"
if [[ -n "$HOSTS" ]]; then
  [[ ${#HOST_OF[@]} == "$NODES" ]] || die "--hosts needs $NODES addresses, not $HOSTS"
fi
if [[ -n "$NETNS" ]]; then
  [[ ${#NETNS_OF[@]} == "$NODES" ]] || die "--netns needs $NODES names, not $NETNS"
  [[ -n "$HOSTS" ]] || die "--netns needs --hosts (the nodes' addresses inside their namespaces)"
fi
if [[ -n "$PEER_PROXIES" ]]; then
  [[ "$PEER_PROXIES" =~ ^[0-9]+$ ]] || die "--peer-proxies must be a port number"
  [[ -n "$NETNS" ]] || die "--peer-proxies needs --netns (the proxies listen on each node's own loopback)"
  [[ "$SASL" != 1 && "$TLS" != 1 ]] || die "--peer-proxies cannot be combined with --sasl or --tls (their ports)"
fi
[[ "$TXN_VERSION" == 1 || "$TXN_VERSION" == 2 ]] || die "--txn-version must be 1 or 2"
EXTRA_N=0 EXTRA_ADV=0
if [[ -n "$EXTRA" ]]; then
  [[ "$EXTRA" =~ ^([1-4]):([0-9]+)$ ]] || die "--extra-listeners must be N:ADVERTISED_BASE with N from 1 to 4, not $EXTRA"
  EXTRA_N="${BASH_REMATCH[1]}" EXTRA_ADV="${BASH_REMATCH[2]}"
fi

# Default ports: fixed for the suite's four clusters, hashed from the dir
# otherwise. All below Linux's ephemeral range (32768-60999): a listener port
# inside it can be taken at random by an outgoing connection's local port.
if [[ -n "$o_port" ]]; then PORT_BASE="$o_port"
elif [[ -z "$PORT_BASE" ]]; then
  case "$dir" in
    "$root_default/tv2") PORT_BASE=29092;;
    "$root_default/tv1") PORT_BASE=29192;;
    "$root_default/sasl") PORT_BASE=29292;;
    "$root_default/3n") PORT_BASE=29392;;
    *) PORT_BASE=$(( 23000 + ($(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 100) * 20 ));;
  esac
  # KRABKA_KAFKA_PORT_OFFSET shifts every default port, so that two checkouts
  # (each with its own KRABKA_KAFKA_ROOT) can run their suites side by side.
  PORT_BASE=$(( PORT_BASE + ${KRABKA_KAFKA_PORT_OFFSET:-0} ))
fi
[[ "$PORT_BASE" =~ ^[0-9]+$ ]] || die "--port must be a number"

pport() { echo $(( PORT_BASE + 10 * ($1 - 1) )); }
cport() { echo $(( PORT_BASE + 10 * ($1 - 1) + 1 )); }
sport() { echo $(( PORT_BASE + 10 * ($1 - 1) + 2 )); }
tport() { echo $(( PORT_BASE + 10 * ($1 - 1) + 3 )); }   # SSL
stport() { echo $(( PORT_BASE + 10 * ($1 - 1) + 4 )); }  # SASL_SSL
mport() { echo $(( PORT_BASE + 10 * ($1 - 1) + 5 )); }   # MTLS (SSL, client certificate required)
xport() { echo $(( PORT_BASE + 10 * ($1 - 1) + 5 + $2 )); }       # extra listener k of node i
xadv() { echo $(( EXTRA_ADV + 10 * ($1 - 1) + $2 - 1 )); }        # where it is advertised
host_of() { if [[ -n "$HOSTS" ]]; then echo "${HOST_OF[$(($1 - 1))]}"; else echo 127.0.0.1; fi; }
peerport() { echo $(( PORT_BASE + 10 * ($1 - 1) + 1 + $2 )); }   # node $1's listener PEER$2
# in_ns I CMD...: run CMD in node I's namespace (as it is without --netns)
in_ns() { local i="$1"; shift; if [[ -n "$NETNS" ]]; then ip netns exec "${NETNS_OF[$((i - 1))]}" "$@"; else "$@"; fi; }
in_client_ns() { if [[ -n "$CLIENT_NETNS" ]]; then ip netns exec "$CLIENT_NETNS" "$@"; else "$@"; fi; }
node_ports() {
  local i="$1" k
  pport "$i"; cport "$i"
  [[ "$SASL" == 1 ]] && sport "$i"
  [[ "$TLS" == 1 ]] && { tport "$i"; stport "$i"; mport "$i"; }
  for ((k = 1; k <= EXTRA_N; k++)); do xport "$i" "$k"; done
  if [[ -n "$PEER_PROXIES" ]]; then for ((k = 1; k <= NODES; k++)); do peerport "$i" "$k"; done; fi
  return 0
}
list_of() { local f="$1" i out=(); for ((i = 1; i <= NODES; i++)); do out+=("$(host_of "$i"):$("$f" "$i")"); done; local IFS=,; echo "${out[*]}"; }
bootstrap() { local i out=(); for ((i = 1; i <= NODES; i++)); do out+=("$(host_of "$i"):$(pport "$i")"); done; local IFS=,; echo "${out[*]}"; }
sasl_bootstrap() { local i out=(); for ((i = 1; i <= NODES; i++)); do out+=("$(host_of "$i"):$(sport "$i")"); done; local IFS=,; echo "${out[*]}"; }

# A pid is ours only if it is alive and its command line names our config.
node_pid() {
  local f="$dir/node-$1/pid" pid
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "$dir/node-$1/server.properties" || return 1
  echo "$pid"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

build_tools() {
  mkdir -p "$cache/bin"
  command -v go >/dev/null || die "go is required (readiness checker)"
  # One build at a time (parallel starts), and only when the sources changed.
  (
    flock -w 300 7 || exit 1
    if [[ -x "$cache/bin/kready" && -x "$cache/bin/kacl" ]] &&
       [[ -z "$(find "$here/cmd" "$repo/go.mod" "$repo/go.sum" -newer "$cache/bin/kacl" -print -quit 2>/dev/null)" ]]; then
      exit 0
    fi
    cd "$repo" && go build -o "$cache/bin/.new/" ./tests/kafka/cmd/kready ./tests/kafka/cmd/kacl &&
      mv -f "$cache/bin/.new/kready" "$cache/bin/kready" && mv -f "$cache/bin/.new/kacl" "$cache/bin/kacl"
  ) 7>"$cache/build.lock" || die "building tests/kafka/cmd tools failed"
}

write_node_config() {
  local i="$1"; local nd="$dir/node-$1" voters="" j rf isr listeners adv h ibl=PLAINTEXT
  h="$(host_of "$i")"
  for ((j = 1; j <= NODES; j++)); do
    if [[ -n "$PEER_PROXIES" && "$j" != "$i" ]]; then
      voters+="${voters:+,}$j@127.0.0.1:$(( PEER_PROXIES + 100 + 10 * i + j ))"
    else
      voters+="${voters:+,}$j@$(host_of "$j"):$(cport "$j")"
    fi
  done
  rf="$NODES"; isr=1; [[ "$NODES" == 3 ]] && isr=2
  listeners="PLAINTEXT://$h:$(pport "$i"),CONTROLLER://$h:$(cport "$i")"
  adv="PLAINTEXT://$h:$(pport "$i")"
  local protomap="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT" k
  if [[ "$SASL" == 1 ]]; then
    listeners+=",SASL_PLAINTEXT://127.0.0.1:$(sport "$i")"
    adv+=",SASL_PLAINTEXT://127.0.0.1:$(sport "$i")"
  fi
  if [[ "$TLS" == 1 ]]; then
    listeners+=",SSL://127.0.0.1:$(tport "$i"),SASL_SSL://127.0.0.1:$(stport "$i"),MTLS://127.0.0.1:$(mport "$i")"
    adv+=",SSL://127.0.0.1:$(tport "$i"),SASL_SSL://127.0.0.1:$(stport "$i"),MTLS://127.0.0.1:$(mport "$i")"
    protomap+=",SSL:SSL,SASL_SSL:SASL_SSL,MTLS:SSL"
  fi
  for ((k = 1; k <= EXTRA_N; k++)); do
    listeners+=",X$k://$h:$(xport "$i" "$k")"
    adv+=",X$k://127.0.0.1:$(xadv "$i" "$k")"
    protomap+=",X$k:PLAINTEXT"
  done
  # PEERk is the listener node k replicates from: advertised at the proxy on
  # node k's loopback (its own at its address), so every broker-to-broker
  # connection crosses a link the caller controls.
  if [[ -n "$PEER_PROXIES" ]]; then
    for ((k = 1; k <= NODES; k++)); do
      listeners+=",PEER$k://$h:$(peerport "$i" "$k")"
      if [[ "$k" == "$i" ]]; then adv+=",PEER$k://$h:$(peerport "$i" "$k")"
      else adv+=",PEER$k://127.0.0.1:$(( PEER_PROXIES + 10 * k + i ))"; fi
      protomap+=",PEER$k:PLAINTEXT"
    done
    ibl="PEER$i"
  fi
  mkdir -p "$nd/data"
  cat > "$nd/server.properties" <<EOP
# generated by tests/kafka/cluster.sh
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=$listeners
advertised.listeners=$adv
controller.listener.names=CONTROLLER
inter.broker.listener.name=$ibl
listener.security.protocol.map=$protomap
log.dirs=$nd/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
num.network.threads=2
num.io.threads=4
background.threads=4
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=4194304
EOP
  if [[ "$SASL" == 1 || "$TLS" == 1 ]]; then
    cat >> "$nd/server.properties" <<'EOP'
sasl.enabled.mechanisms=SCRAM-SHA-256
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
EOP
  fi
  if [[ "$SASL" == 1 ]]; then
    # The client certificate's principal (MTLS listener) is a super user too.
    cat >> "$nd/server.properties" <<'EOP'
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS;User:CN=krabka-client
allow.everyone.if.no.acl.found=false
EOP
  fi
  if [[ "$TLS" == 1 ]]; then
    cat >> "$nd/server.properties" <<EOP
ssl.keystore.type=PEM
ssl.keystore.location=$dir/certs/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$dir/certs/ca.pem
ssl.client.auth=none
listener.name.mtls.ssl.client.auth=required
ssl.endpoint.identification.algorithm=
EOP
  fi
  cat > "$nd/log4j2.properties" <<EOP
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $nd/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = FILE
EOP
  # Kafka 3.x logs through log4j 1 (reload4j).
  cat > "$nd/log4j.properties" <<EOP
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$nd/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
EOP
}

java_cp() { echo "$LIB/*"; }

format_node() {
  local i="$1" args=()
  old_kafka || args+=(--feature "transaction.version=$TXN_VERSION")
  if [[ "$SASL" == 1 || "$TLS" == 1 ]]; then
    args+=(--add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'
           --add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'
           --add-scram 'SCRAM-SHA-256=[name=mallory,password=mallory-secret]')
  fi
  java -Xmx256m -Dlog4j2.configurationFile="$dir/node-$i/log4j2.properties" -cp "$(java_cp)" \
    kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$dir/node-$i/server.properties" "${args[@]}" \
    > "$dir/node-$i/format.log" 2>&1 || { cat "$dir/node-$i/format.log" >&2; die "formatting node $i failed"; }
}

launch_node() {
  local i="$1"; local nd="$dir/node-$1" p ns=()
  if [[ -n "$NETNS" ]]; then
    ns=(ip netns exec "${NETNS_OF[$((i - 1))]}") # a namespace of its own: nothing else listens there
  else
    for p in $(node_ports "$i"); do
      port_busy "$p" && die "port $p (node $i of $NAME) is busy: another process listens on 127.0.0.1:$p; stop it or choose another base with --port"
    done
  fi
  # setsid: own session, so a terminal ^C goes to the caller, which then runs `stop`.
  # (ip netns exec execs java: the pid stays the node's)
  setsid "${ns[@]}" java -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$nd/log4j2.properties" \
    -Dlog4j.configuration="file:$nd/log4j.properties" \
    -cp "$(java_cp)" kafka.Kafka "$nd/server.properties" \
    < /dev/null > "$nd/stdout.log" 2>&1 8>&- 9>&- &
  echo $! > "$nd/pid"
}

wait_ready() {
  # kready asks the cluster; meanwhile a node that dies ends the wait at once.
  local out="$dir/kready.out" kp i dead=""
  in_client_ns "$cache/bin/kready" -bootstrap "$(bootstrap)" -brokers "$1" -timeout "${timeout}s" -features > "$out" 2>&1 &
  kp=$!; KREADY_PID=$kp
  while kill -0 "$kp" 2>/dev/null; do
    for ((i = 1; i <= NODES; i++)); do
      # (plain kill -0: right after the fork the command line is not java's yet)
      # A missing pid file means someone ran `stop` meanwhile.
      kill -0 "$(cat "$dir/node-$i/pid" 2>/dev/null || echo none)" 2>/dev/null || dead+=" $i"
    done
    if [[ -n "$dead" ]]; then kill "$kp" 2>/dev/null; break; fi
    sleep 0.3
  done
  if [[ -n "$dead" ]] || ! wait "$kp"; then
    [[ -n "$dead" ]] || cat "$out" >&2
    for ((i = 1; i <= NODES; i++)); do
      if ! node_pid "$i" >/dev/null; then
        log "node $i is not running; last lines of its logs:"
        tail -n 5 "$dir/node-$i/stdout.log" >&2 2>/dev/null || true
        grep -E 'ERROR|Exception' "$dir/node-$i/server.log" 2>/dev/null | tail -n 8 >&2 || true
      fi
    done
    [[ -n "$dead" ]] && die "node(s)$dead of $NAME exited during startup (logs in $dir/node-*/)"
    die "cluster $NAME not ready within ${timeout}s (logs in $dir/node-*/)"
  fi
  mv "$out" "$dir/features"
}

start_watchdog() {
  [[ -n "$owner" ]] || return 0
  kill -0 "$owner" 2>/dev/null || die "--owner $owner is not a running process"
  setsid bash -c '
    owner=$1; shift
    while kill -0 "$owner" 2>/dev/null; do sleep 1; done
    rm -f "$1/watchdog.pid"
    exec "$2" stop --dir "$1"
  ' watchdog "$owner" "$dir" "$here/cluster.sh" < /dev/null > "$dir/watchdog.log" 2>&1 8>&- 9>&- &
  echo $! > "$dir/watchdog.pid"
}

running_nodes() { local i n=0; for ((i = 1; i <= NODES; i++)); do node_pid "$i" >/dev/null && n=$((n + 1)); done; echo "$n"; }

create_acls() {
  "$cache/bin/kacl" -bootstrap "$(sasl_bootstrap)" -user admin -password admin-secret -timeout "${timeout}s" >&2 \
    || die "creating ACLs on $NAME failed"
}

start_cleanup() {
  set +e # never stop half way
  [[ "$1" == 0 ]] && return 0
  local p
  for p in "${FORMAT_PIDS[@]}" ${KREADY_PID:-}; do pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  log "start failed: stopping the nodes it launched"
  do_stop
}

do_start() {
  LIB="$(KRABKA_KAFKA_VERSION="$KAFKA_VERSION" "$here/fetch.sh")" || die "fetching Kafka ${KAFKA_VERSION:-} failed"
  build_tools
  mkdir -p "$dir"
  exec 8>"$dir/.lock"; flock -w 300 8 || die "another cluster.sh holds $dir/.lock"
  if [[ -f "$conf" ]]; then
    # An existing cluster in this dir: its saved options win if it runs.
    local sn="$NODES" ss="$SASL" st="$TXN_VERSION" sp="$PORT_BASE" stl="$TLS" sx="$EXTRA"
    local sh="$HOSTS" snn="$NETNS" sc="$CLIENT_NETNS" spp="$PEER_PROXIES"
    # shellcheck disable=SC1090
    source "$conf"
    local up; up="$(running_nodes)"
    if [[ "$up" -gt 0 ]]; then
      # Only options given explicitly must match the running cluster.
      if [[ ( -n "$o_nodes" && "$sn" != "$NODES" ) || ( -n "$o_sasl" && "$ss" != "$SASL" ) ||
            ( -n "$o_tv" && "$st" != "$TXN_VERSION" ) || ( -n "$o_port" && "$sp" != "$PORT_BASE" ) ||
            ( -n "$o_tls" && "$stl" != "$TLS" ) || ( -n "$o_extra" && "$sx" != "$EXTRA" ) ]]; then
        die "a different cluster (nodes=$NODES sasl=$SASL tls=$TLS extra=$EXTRA txn-version=$TXN_VERSION port=$PORT_BASE) runs in $dir; stop it first"
      fi
      if [[ "$up" -lt "$NODES" ]]; then
        local i; for ((i = 1; i <= NODES; i++)); do node_pid "$i" >/dev/null || launch_node "$i"; done
        wait_ready "$NODES"
      else
        log "$NAME already running"
      fi
      start_watchdog
      bootstrap; return 0
    fi
    NODES="$sn" SASL="$ss" TXN_VERSION="$st" PORT_BASE="$sp" TLS="$stl" EXTRA="$sx"
    HOSTS="$sh" NETNS="$snn" CLIENT_NETNS="$sc" PEER_PROXIES="$spp"
  fi
  # Fresh cluster: wipe old state, keep nothing.
  local i
  for ((i = 1; i <= NODES + 2; i++)); do rm -rf "$dir/node-$i"; done
  rm -f "$dir/features" "$dir/ready-seconds"
  local t0; t0=$(date +%s%3N)
  for ((i = 1; i <= NODES; i++)); do
    local p
    [[ -n "$NETNS" ]] && break
    for p in $(node_ports "$i"); do
      port_busy "$p" && die "port $p (node $i of $NAME) is busy: another process listens on 127.0.0.1:$p; stop it or choose another base with --port"
    done
  done
  CLUSTER_ID="$(java -Xmx128m -cp "$LIB/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)"
  [[ -n "$CLUSTER_ID" ]] || die "StorageTool random-uuid failed"
  cat > "$conf" <<EOC
NAME=$NAME
NODES=$NODES
SASL=$SASL
TLS=$TLS
EXTRA=$EXTRA
KAFKA_VERSION=$KAFKA_VERSION
TXN_VERSION=$TXN_VERSION
PORT_BASE=$PORT_BASE
HOSTS=$HOSTS
NETNS=$NETNS
CLIENT_NETNS=$CLIENT_NETNS
PEER_PROXIES=$PEER_PROXIES
CLUSTER_ID=$CLUSTER_ID
LIB='$LIB'
EOC
  if [[ "$TLS" == 1 ]]; then "$here/certs.sh" "$dir/certs" || die "making the test certificates failed"; fi
  for ((i = 1; i <= NODES; i++)); do write_node_config "$i"; done
  # From here on, a failed or interrupted start ends its helpers and stops
  # the nodes it launched.
  FORMAT_PIDS=()
  trap 'start_cleanup $?' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  for ((i = 1; i <= NODES; i++)); do format_node "$i" & FORMAT_PIDS+=($!); done
  for i in "${FORMAT_PIDS[@]}"; do wait "$i" || die "formatting failed"; done
  FORMAT_PIDS=()
  for ((i = 1; i <= NODES; i++)); do launch_node "$i"; done
  start_watchdog # early: an owner that dies mid-start also takes the cluster down
  wait_ready "$NODES"
  [[ "$SASL" == 1 ]] && create_acls
  local ms=$(( $(date +%s%3N) - t0 ))
  printf '%d.%03d\n' $((ms / 1000)) $((ms % 1000)) > "$dir/ready-seconds"
  old_kafka || grep -q "^transaction.version=$TXN_VERSION\$" "$dir/features" \
    || die "cluster $NAME came up without transaction.version=$TXN_VERSION (features: $(tr '\n' ' ' < "$dir/features"))"
  trap - EXIT INT TERM
  log "$NAME ready in $(cat "$dir/ready-seconds")s (nodes=$NODES sasl=$SASL tls=$TLS extra=$EXTRA txn-version=$TXN_VERSION dir=$dir)"
  bootstrap
}

do_stop() {
  [[ -d "$dir" ]] || { log "nothing in $dir"; return 0; }
  if [[ -f "$dir/watchdog.pid" ]]; then
    local w; w="$(cat "$dir/watchdog.pid")"
    if [[ -n "$w" && -r "/proc/$w/cmdline" ]] && tr '\0' ' ' < "/proc/$w/cmdline" | grep -qF "$dir"; then kill "$w" 2>/dev/null || true; fi
    rm -f "$dir/watchdog.pid"
  fi
  local i pids=() pid
  for ((i = 1; i <= NODES; i++)); do
    if pid="$(node_pid "$i")"; then pids+=("$pid"); kill -TERM "$pid" 2>/dev/null || true; fi
  done
  [[ ${#pids[@]} -eq 0 ]] && { log "$NAME not running"; return 0; }
  local deadline=$(( $(date +%s) + ${KRABKA_KAFKA_STOP_SECONDS:-20} ))
  while [[ $(date +%s) -lt $deadline ]]; do
    local alive=0; for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then log "pid $pid ignored SIGTERM; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  done
  for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done
  for ((i = 1; i <= NODES; i++)); do rm -f "$dir/node-$i/pid"; done
  log "$NAME stopped (${#pids[@]} node(s))"
}

do_status() {
  [[ -f "$conf" ]] || { echo "$NAME: not created ($dir)"; exit 3; }
  local i up=0 pid
  for ((i = 1; i <= NODES; i++)); do
    if pid="$(node_pid "$i")"; then up=$((up + 1)); echo "node $i: running pid $pid port $(pport "$i")"; else echo "node $i: stopped"; fi
  done
  echo "$NAME: $up/$NODES nodes running; bootstrap $(bootstrap)"
  [[ "$SASL" == 1 ]] && echo "$NAME: sasl bootstrap $(sasl_bootstrap)"
  [[ "$TLS" == 1 ]] && echo "$NAME: ssl $(list_of tport) sasl_ssl $(list_of stport) mtls $(list_of mport)"
  [[ "$up" == "$NODES" ]] || exit 3
}

do_env() {
  local suffix=""
  if [[ "$TLS" == 1 ]]; then
    echo "export KRABKA_TLS_BOOTSTRAP=$(list_of tport)"
    echo "export KRABKA_TLS_SASL_BOOTSTRAP=$(list_of stport)"
    echo "export KRABKA_TLS_MTLS_BOOTSTRAP=$(list_of mport)"
    echo "export KRABKA_TLS_PLAIN_BOOTSTRAP=$(bootstrap)"
    echo "export KRABKA_TLS_CERTS=$dir/certs"
    [[ "$SASL" == 1 ]] || return 0
  fi
  if [[ "$SASL" == 1 ]]; then
    echo "export KRABKA_SASL_BOOTSTRAP=$(sasl_bootstrap)"
    echo "export KRABKA_SASL_PLAIN_BOOTSTRAP=$(bootstrap)"
    echo "export KRABKA_SASL_DIR=$dir"
    echo "export KRABKA_SASL_MECHANISM=SCRAM-SHA-256"
    echo "export KRABKA_SASL_ADMIN_USER=admin KRABKA_SASL_ADMIN_PASSWORD=admin-secret"
    echo "export KRABKA_SASL_ALICE_USER=alice KRABKA_SASL_ALICE_PASSWORD=alice-secret"
    echo "export KRABKA_SASL_MALLORY_USER=mallory KRABKA_SASL_MALLORY_PASSWORD=mallory-secret"
    return
  fi
  [[ "$NODES" == 3 ]] && suffix+="_3N"
  [[ "$TXN_VERSION" == 1 ]] && suffix+="_TV1"
  echo "export KRABKA_BOOTSTRAP${suffix}=$(bootstrap)"
  echo "export KRABKA_BOOTSTRAP${suffix}_DIR=$dir"
  # Extra listener k: where its proxy must listen (advertised, what a client
  # bootstraps on) and the broker's side (the proxy's target), per node.
  local k i adv tgt
  for ((k = 1; k <= EXTRA_N; k++)); do
    adv=() tgt=()
    for ((i = 1; i <= NODES; i++)); do adv+=("127.0.0.1:$(xadv "$i" "$k")"); tgt+=("127.0.0.1:$(xport "$i" "$k")"); done
    echo "export KRABKA_BOOTSTRAP${suffix}_X${k}=$(IFS=,; echo "${adv[*]}") KRABKA_BOOTSTRAP${suffix}_X${k}_TARGET=$(IFS=,; echo "${tgt[*]}")"
  done
}

case "$verb" in
  start) do_start;;
  stop) do_stop;;
  status) do_status;;
  env) do_env;;
  bootstrap) bootstrap;;
  kill-node)
    IFS=, read -r -a nodes_arg <<< "$node_arg"
    pids=()
    for n in "${nodes_arg[@]}"; do
      [[ "$n" -ge 1 && "$n" -le "$NODES" ]] || die "no node $n in $NAME"
      pid="$(node_pid "$n")" || die "node $n of $NAME is not running"
      pids+=("$pid")
    done
    for pid in "${pids[@]}"; do kill -KILL "$pid"; done
    for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; done
    for n in "${nodes_arg[@]}"; do rm -f "$dir/node-$n/pid"; done
    log "node(s) $node_arg (pid ${pids[*]}) SIGKILLed";;
  start-node)
    IFS=, read -r -a nodes_arg <<< "$node_arg"
    for n in "${nodes_arg[@]}"; do [[ "$n" -ge 1 && "$n" -le "$NODES" ]] || die "no node $n in $NAME"; done
    [[ -f "$conf" ]] || die "no cluster in $dir"
    LIB="${LIB:-$(KRABKA_KAFKA_VERSION="$KAFKA_VERSION" "$here/fetch.sh")}"; build_tools
    exec 8>"$dir/.lock"; flock -w 300 8 || die "another cluster.sh holds $dir/.lock"
    for n in "${nodes_arg[@]}"; do
      if node_pid "$n" >/dev/null; then log "node $n already running"; else launch_node "$n"; fi
    done
    wait_ready "$NODES"; bootstrap;;
  *) die "unknown verb $verb";;
esac
