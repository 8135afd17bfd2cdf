#!/bin/bash
# pick and leases on 8 free NPUs (fake DCMI): 50 concurrent `pick 1 --lease` get 8 distinct
# devices and 42 clear refusals; 10 concurrent `pick 2 --lease` get 4 disjoint pairs; leases lists the 8 holders; a SIGKILLed holder frees its
# device at once; release ends a lease; a holder exits with the process it holds for; pick
# prefers one HCCS domain and says why each other device was refused.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
cleanup() {
    # Every holder left: they hold for this script, but end them now.
    if [ -d "$tmp/leases" ]; then
        for p in $("$HBMCTL" leases --lease-dir "$tmp/leases" --json 2>/dev/null |
                   jq -r '.leases[].pid // empty' | sort -u); do
            kill -9 "$p" 2>/dev/null
        done
    fi
    [ -n "${guard:-}" ] && kill -9 "$guard" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fake_dcmi
export HBMCTL_LEASE_DIR="$tmp/leases"

# 8 idle 910B3 chips; topology: chips 0-3 and 4-7 are two HCCS domains joined through SYS.
python3 - "$tmp/scenario.json" <<'PY'
import json, sys
cards = [{"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
          "hbm": {"total_mb": 65536, "used_mb": 3400}, "processes": []}]} for i in range(8)]
# DCMI topology codes: 0 self, 1 SYS, 3 HCCS.
topo = [[0 if i == j else (3 if i // 4 == j // 4 else 1) for j in range(8)] for i in range(8)]
json.dump({"driver_version": "24.1.rc2", "cards": cards, "topology": topo}, open(sys.argv[1], "w"))
PY

"$HBMCTL" status --backend dcmi >/dev/null 2>&1
check "the fake scenario observes" [ $? -eq 0 ]

# 50 racing picks, all holding for this script.
for i in $(seq 1 50); do
    "$HBMCTL" pick 1 --backend dcmi --lease "race$i" --hold-pid $$ --format list \
        >"$tmp/out.$i" 2>"$tmp/err.$i" &
    echo $! >"$tmp/pid.$i"
done
ok=0; refused=0; other=0
for i in $(seq 1 50); do
    wait "$(cat "$tmp/pid.$i")"
    case $? in
    0) ok=$((ok + 1)) ;;
    1) refused=$((refused + 1)) ;;
    *) other=$((other + 1)); echo "pick $i: $(cat "$tmp/err.$i")" >&2 ;;
    esac
done
check "8 picks succeed (got $ok)" [ "$ok" -eq 8 ]
check "42 picks are refused (got $refused, errors $other)" [ "$refused" -eq 42 ]
distinct=$(cat "$tmp"/out.* | sort -u | grep -c .)
check "the 8 winners got 8 distinct devices (got $distinct)" [ "$distinct" -eq 8 ]
check "every device 0-7 was handed out" \
    [ "$(cat "$tmp"/out.* | sort -n | tr '\n' ' ')" = "0 1 2 3 4 5 6 7 " ]
loser=$(grep -l . "$tmp"/err.* | while read -r f; do
    n=${f##*.}; [ -s "$tmp/out.$n" ] || { echo "$f"; break; }; done)
check "a refused pick says why, counting no usable device" \
    grep -q "cannot pick 1 device: 0 usable of 8" "$loser"
check "a refused pick names the lease holding each device" grep -q "leased as 'race" "$loser"

held=$("$HBMCTL" leases --json | jq '[.leases[] | select(.held)] | length')
check "leases lists 8 held leases (got $held)" [ "$held" -eq 8 ]
check "leases names the holder and the guarded pid" \
    [ "$("$HBMCTL" leases --json | jq "[.leases[] | select(.hold_pid == $$ and .pid > 0)] | length")" -eq 8 ]
check "leases prints a table" bash -c "'$HBMCTL' leases | grep -q '^DEVICE'"

# SIGKILL one holder: its device is free again at once (no stale lease).
victim_dev=3
victim=$("$HBMCTL" leases --json | jq ".leases[] | select(.device == $victim_dev) | .pid")
kill -9 "$victim"
for _ in $(seq 1 50); do kill -0 "$victim" 2>/dev/null || break; sleep 0.1; done
got=$("$HBMCTL" pick 1 --backend dcmi --lease again --hold-pid $$ --format list 2>"$tmp/again.err")
check "after SIGKILL of its holder device $victim_dev is picked again (got '$got')" \
    [ "$got" = "$victim_dev" ]

# release ends a lease by stopping its holder.
name=$("$HBMCTL" leases --json | jq -r '.leases[] | select(.device == 5) | .name')
"$HBMCTL" release "$name" >/dev/null
check "release $name exits 0" [ $? -eq 0 ]
check "device 5 is free after release" \
    [ "$("$HBMCTL" leases --json | jq '[.leases[] | select(.device == 5 and .held)] | length')" -eq 0 ]
"$HBMCTL" release no-such-lease 2>/dev/null
check "release of an unknown name exits 1" [ $? -eq 1 ]

# A lease ends when the process it holds for exits.
sleep 300 & guard=$!
"$HBMCTL" pick 1 --backend dcmi --lease guarded --hold-pid "$guard" --format list >"$tmp/g.out" 2>/dev/null
check "guarded pick gets device 5" [ "$(cat "$tmp/g.out")" = "5" ]
kill "$guard"; wait "$guard" 2>/dev/null
freed=0
for _ in $(seq 1 100); do
    if [ "$("$HBMCTL" leases --json | jq '[.leases[] | select(.name == "guarded" and .held)] | length')" -eq 0 ]; then
        freed=1; break
    fi
    sleep 0.1
done
check "the lease ends when its --hold-pid exits" [ "$freed" -eq 1 ]

# Choice and explanations without leases: one HCCS domain, refusals named.
for p in $("$HBMCTL" leases --json | jq -r '.leases[] | select(.held) | .pid'); do
    kill -9 "$p"
done
sleep 0.3
out=$("$HBMCTL" pick 4 --backend dcmi --json)
check "pick 4 takes one HCCS domain" \
    [ "$(echo "$out" | jq -c .devices)" = "[0,1,2,3]" ]
check "pick json carries the env variable" \
    [ "$(echo "$out" | jq -r '.env.ASCEND_RT_VISIBLE_DEVICES')" = "0,1,2,3" ]
check "pick json explains the 4 others" [ "$(echo "$out" | jq '.refused | length')" -eq 4 ]
check "env format" [ "$("$HBMCTL" pick 2 --backend dcmi 2>/dev/null)" = "ASCEND_RT_VISIBLE_DEVICES=0,1" ]
"$HBMCTL" pick 9 --backend dcmi >/dev/null 2>"$tmp/nine.err"
check "pick 9 of 8 exits 1" [ $? -eq 1 ]
check "pick 9 of 8 says why" grep -q "8 usable" "$tmp/nine.err"
# 10 racing picks of 2: exactly 4 succeed, the pairs are disjoint and inside one domain.
for i in $(seq 1 10); do
    "$HBMCTL" pick 2 --backend dcmi --lease "pair$i" --hold-pid $$ --format list \
        >"$tmp/pair.$i" 2>/dev/null &
done
wait
pairs=$(cat "$tmp"/pair.* | grep -c .)
check "4 of 10 pairs succeed (got $pairs)" [ "$pairs" -eq 4 ]
check "the pairs share no device" [ "$(cat "$tmp"/pair.* | tr ',' '\n' | sort -u | grep -c .)" -eq 8 ]
check "each pair stays in one HCCS domain" \
    [ "$(cat "$tmp"/pair.* | awk -F, '{ if (int($1 / 4) != int($2 / 4)) bad++ } END { print bad + 0 }')" -eq 0 ]
"$HBMCTL" pick 1 --backend dcmi --min-free 100GiB >/dev/null 2>"$tmp/min.err"
check "--min-free refuses small devices with a reason" grep -q "less than --min-free" "$tmp/min.err"
finish
