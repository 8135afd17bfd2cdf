#!/bin/bash
# On a terminal, the child is the foreground process group: it reads what is typed, Ctrl-Z
# stops it (and hbmctl with it, as a shell job), SIGCONT resumes both, and Ctrl-C
# interrupts the child (not hbmctl), exactly as without hbmctl.
. "$(dirname "$0")/common.bash"
run_scratch
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to drive a pseudo-terminal"; exit 0; }

python3 - "$HBMCTL" <<'PY' || fail "terminal test failed"
import os, pty, select, signal, sys, time

hbmctl = sys.argv[1]
script = ('read line; echo "got:$line"; trap "echo caught-INT; exit 5" INT; '
          'echo waiting; while :; do sleep 0.1; done')
pid, fd = pty.fork()
if pid == 0:
    os.execv(hbmctl, [hbmctl, "run", "--grace", "5s", "--", "sh", "-c", script])

buf = b""
def expect(word, timeout=30.0):
    global buf
    end = time.time() + timeout
    while word not in buf:
        left = end - time.time()
        if left <= 0:
            sys.stderr.write("timed out waiting for %r; output so far:\n%s\n" % (word, buf.decode(errors="replace")))
            sys.exit(1)
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                sys.stderr.write("terminal closed waiting for %r:\n%s\n" % (word, buf.decode(errors="replace")))
                sys.exit(1)
            buf += data

expect(b"started sh")
time.sleep(0.3)
os.write(fd, b"hello\n")
expect(b"got:hello")          # the child read from the terminal: it is in the foreground
expect(b"waiting")
time.sleep(0.3)
# Ctrl-Z: the child stops; hbmctl takes the terminal back and stops itself, as a shell job
os.write(fd, b"\x1a")
deadline = time.time() + 30
stopped = False
while time.time() < deadline:
    wpid, status = os.waitpid(pid, os.WUNTRACED | os.WNOHANG)
    if wpid == pid and os.WIFSTOPPED(status):
        stopped = True
        break
    time.sleep(0.05)
if not stopped:
    sys.stderr.write("hbmctl did not stop with its child on Ctrl-Z\n%s\n" % buf.decode(errors="replace"))
    sys.exit(1)
os.kill(pid, signal.SIGCONT)  # what `fg` does: the child gets the terminal and runs again
time.sleep(0.5)
os.write(fd, b"\x03")         # Ctrl-C: SIGINT to the foreground group only
expect(b"caught-INT")
expect(b"summary:")
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
if code != 5:
    sys.stderr.write("exit %d, expected the child's 5\n%s\n" % (code, buf.decode(errors="replace")))
    sys.exit(1)
if b"SIGINT received" in buf:
    sys.stderr.write("hbmctl itself got the Ctrl-C:\n%s\n" % buf.decode(errors="replace"))
    sys.exit(1)
print("ok: the child read from the terminal, stopped and went on with Ctrl-Z and SIGCONT, and Ctrl-C reached it alone; exit 5")
PY
