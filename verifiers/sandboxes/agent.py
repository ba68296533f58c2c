"""The sandbox agent: runs the host's commands inside one long-lived sandbox.

The host starts it once per sandbox (as the sandbox's first process) and then
talks to it over its stdin and stdout, one JSON object per line, so a command
costs a fork and an exec instead of a whole sandbox start::

    agent → host   {"ready": true, "pid": 2}                                  (once)
    host → agent   {"id": 7, "command": "ls", "timeout": 30, "cwd": "/workspace", "env": {}}
    agent → host   {"id": 7, "stdout": "...", "stderr": "", "exit_code": 0, "timed_out": false,
                    "truncated": false, "duration_s": 0.004}
                   {"id": 7, "error": "...", "kind": "not_found" | "bad_request"}

Commands run concurrently, each in its own session. Output beyond the limit is
read and dropped (so a flood cannot block or bloat anything) and flagged. A
command ends when its shell exits; output still buffered is collected, but
background processes holding its pipes are not waited for. On timeout the
command's session is killed, and when no other command is running, every
process in the sandbox but the agent (``kill(-1)``: double-forked daemons too).

It uses the standard library only and no asyncio (which would triple its start
time): it runs under the sandbox's own Python.
"""

from __future__ import annotations

import heapq
import json
import os
import resource
import selectors
import signal
import sys
import time

GRACE_S = 0.05  # after the shell exits, how long to wait for its output to drain
ORPHAN_REAP_S = 0.5  # as pid 1, how often to wait for orphans that exited
READ_CHUNK = 65536


class Loop:
    """A minimal event loop: readable file descriptors and timers."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.timers: list = []
        self.counter = 0

    def watch(self, fd: int, callback) -> None:
        self.selector.register(fd, selectors.EVENT_READ, callback)

    def unwatch(self, fd: int) -> None:
        self.selector.unregister(fd)

    def later(self, delay: float, callback) -> list:
        self.counter += 1
        entry = [time.monotonic() + delay, self.counter, callback]
        heapq.heappush(self.timers, entry)
        return entry

    @staticmethod
    def cancel(entry) -> None:
        if entry is not None:
            entry[2] = None

    def run_once(self) -> None:
        while self.timers and self.timers[0][2] is None:
            heapq.heappop(self.timers)
        timeout = max(0.0, self.timers[0][0] - time.monotonic()) if self.timers else None
        for key, _ in self.selector.select(timeout):
            key.data()
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            callback = heapq.heappop(self.timers)[2]
            if callback is not None:
                callback()


class Stream:
    """One output pipe of a command: keeps the first ``limit`` bytes, drops the rest."""

    def __init__(self, job: Job, fd: int, limit: int) -> None:
        self.job, self.fd, self.limit = job, fd, limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.truncated = False
        self.open = True
        os.set_blocking(fd, False)
        job.loop.watch(fd, self.on_readable)

    def on_readable(self) -> None:
        if not self.open:
            return
        try:
            data = os.read(self.fd, READ_CHUNK)
        except BlockingIOError:
            return
        if not data:
            self.close()
            self.job.maybe_finish()
            return
        room = self.limit - self.kept
        if room > 0:
            self.chunks.append(data[:room])
            self.kept += min(room, len(data))
        if len(data) > room:
            self.truncated = True

    def close(self) -> None:
        if self.open:
            self.open = False
            self.job.loop.unwatch(self.fd)
            os.close(self.fd)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


class Job:
    """One command, from spawn to its answer."""

    def __init__(self, agent: Agent, request_id, command: str, timeout: float, cwd: str, env: dict) -> None:
        self.agent, self.loop, self.id = agent, agent.loop, request_id
        self.started = time.monotonic()
        self.pid, pipes = spawn([agent.shell, "-c", command], env, cwd, capture=True)
        agent.children.add(self.pid)
        prefer_to_kill(self.pid)
        self.streams = [Stream(self, fd, agent.max_output) for fd in pipes]
        self.exited = self.timed_out = self.done = False
        self.returncode = 0
        self.grace: list | None = None  # the timer that waits for output after the exit
        self.timer = self.loop.later(timeout, self.on_timeout)
        on_exit(self.loop, self.pid, self.on_exit)

    def on_exit(self, status: int) -> None:
        if self.exited:
            return
        self.exited = True
        self.agent.children.discard(self.pid)
        self.returncode = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        Loop.cancel(self.timer)
        if not self.maybe_finish():
            self.grace = self.loop.later(GRACE_S, self.finish)

    def maybe_finish(self) -> bool:
        if self.exited and not any(s.open for s in self.streams):
            self.finish()
            return True
        return False

    def kill(self) -> None:
        """Kill the command's session (what it started in the background too, unless it left the session)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def on_timeout(self) -> None:
        self.timed_out = True
        self.kill()
        if len(self.agent.jobs) == 1:
            self.agent.sweep()

    def finish(self) -> None:
        if self.done:
            return
        self.done = True
        Loop.cancel(self.grace)
        for stream in self.streams:
            stream.close()
        self.agent.jobs.pop(self.id, None)
        self.agent.reply({
            "id": self.id, "stdout": self.streams[0].text(), "stderr": self.streams[1].text(),
            "exit_code": self.returncode, "timed_out": self.timed_out,
            "truncated": any(s.truncated for s in self.streams),
            "duration_s": round(time.monotonic() - self.started, 6),
        })


# Python ignores these; an exec'd program must get the default actions back (``yes | head`` relies on SIGPIPE).
_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)


def spawn(argv: list, env: dict, cwd: str, capture: bool) -> tuple:
    """Start ``argv`` in a session of its own with stdin on /dev/null; returns its pid and, with
    ``capture``, the read ends of its stdout and stderr pipes (else both go to /dev/null).

    ``posix_spawn`` (vfork and exec in the C library) costs half the agent time of
    ``subprocess.Popen``, which matters when the command itself is trivial. Its
    children inherit no other descriptor: Python opens every one close-on-exec. The
    agent is single-threaded, so it can change its own directory for the child.
    (``setsid`` needs glibc 2.26 or later.)
    """
    actions: list[tuple] = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
    ends: list = []
    if capture:
        ends = [os.pipe(), os.pipe()]
        actions += [(os.POSIX_SPAWN_DUP2, ends[0][1], 1), (os.POSIX_SPAWN_DUP2, ends[1][1], 2)]
    else:
        actions += [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_WRONLY, 0) for fd in (1, 2)]
    try:
        os.chdir(cwd)
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True, setsigdef=_DEFAULT_SIGNALS)
    except BaseException:
        for read_end, _ in ends:
            os.close(read_end)
        raise
    finally:
        for _, write_end in ends:
            os.close(write_end)
    return pid, [read_end for read_end, _ in ends]


def on_exit(loop: Loop, pid: int, callback) -> None:
    """Reap ``pid`` when it exits and call ``callback(wait status)``."""
    def reap() -> None:  # watched only once pidfd is open
        loop.unwatch(pidfd)
        os.close(pidfd)
        callback(os.waitpid(pid, 0)[1])

    def poll() -> None:
        reaped, status = os.waitpid(pid, os.WNOHANG)
        if reaped == 0:
            loop.later(0.005, poll)
        else:
            callback(status)

    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # Python < 3.9 or kernel < 5.3: poll instead
        loop.later(0.005, poll)
        return
    loop.watch(pidfd, reap)


class Agent:
    """Reads requests from stdin, runs them, writes answers to stdout."""

    def __init__(self, config: dict) -> None:
        self.loop = Loop()
        self.jobs: dict = {}
        self.buffer = b""
        self.shell = config.get("shell", "/bin/bash")
        self.max_output = int(config.get("max_output", 262144))
        self.base_env = dict(config.get("env", {}))
        self.default_cwd = config.get("cwd", "/workspace")
        self.own_pid_namespace = config.get("own_pid_namespace") is True
        self.children: set = set()  # pids this agent spawned and waits for itself

    def serve(self) -> None:
        os.set_blocking(0, False)
        self.loop.watch(0, self.on_stdin)
        self.reply({"ready": True, "pid": os.getpid()})
        if os.getpid() == 1:
            self.reap_orphans()
        while True:
            self.loop.run_once()

    def on_stdin(self) -> None:
        try:
            data = os.read(0, READ_CHUNK)
        except BlockingIOError:
            return
        if not data:  # the host closed the sandbox (or is gone): so is everything we started
            for job in list(self.jobs.values()):
                job.kill()
            self.sweep()
            os._exit(0)
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                self.handle(line)

    def handle(self, line: bytes) -> None:
        try:
            request = json.loads(line)
            request_id = request["id"]
        except (ValueError, KeyError, TypeError):
            sys.stderr.write(f"agent: unreadable request {line[:200]!r}\n")
            return
        try:
            command, timeout = str(request["command"]), float(request["timeout"])
            cwd = os.path.join(self.default_cwd, str(request.get("cwd") or ""))  # relative: to the default
            env = {**self.base_env, **{str(k): str(v) for k, v in (request.get("env") or {}).items()}}
        except (KeyError, TypeError, ValueError) as error:
            self.reply({"id": request_id, "error": f"bad request: {error}", "kind": "bad_request"})
            return
        if not os.path.isdir(cwd):
            self.reply({"id": request_id, "error": f"working directory {cwd} does not exist", "kind": "not_found"})
            return
        try:
            self.jobs[request_id] = Job(self, request_id, command, timeout, cwd, env)
        except (OSError, ValueError) as error:  # E2BIG for a command over the kernel's limit, a NUL byte, ...
            self.reply({"id": request_id, "error": f"cannot start the command: {error}", "kind": "bad_request"})

    def sweep(self) -> None:
        """Kill every process of the sandbox except this one (the sandbox's init is spared by the kernel).

        ``kill(-1)`` reaches every process the caller may signal in its pid
        namespace, so it runs only when the host said the namespace is the
        sandbox's own and the agent is certainly at its top: pid 2 under pid 1
        (bubblewrap's init), or pid 1 itself (gVisor's container process, whose
        kill(-1) spares only itself). Anywhere else (the unisolated mode, a test
        on the host) it would kill the host's processes.
        """
        at_top = os.getpid() == 1 or (os.getpid() == 2 and os.getppid() == 1)
        if not (self.own_pid_namespace and at_top):
            return
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # repeat: a fork bomb forks between the kernel's visits
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                return
            if not others_alive():
                return
            time.sleep(0.002)

    def reap_orphans(self) -> None:
        """As pid 1 (under gVisor) orphans become the agent's children: wait for the exited ones that are
        not its own commands (those are waited for by ``on_exit``), so no zombie piles up."""
        for pid in orphaned_zombies(self.children):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        self.loop.later(ORPHAN_REAP_S, self.reap_orphans)

    def reply(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(1, data):]


def prefer_to_kill(pid: int) -> None:
    """Make a command the kernel's first choice when the sandbox runs out of memory, so the agent
    survives (files in a full tmpfs belong to no process, and the agent may be the biggest one)."""
    try:
        with open(f"/proc/{pid}/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:  # it already exited
        pass


def orphaned_zombies(own: set) -> list:
    """Exited processes whose parent is this agent (pid 1) and that it did not start itself."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in own or int(name) == 1:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == b"Z" and fields[1] == b"1":
            found.append(int(name))
    return found


def others_alive() -> bool:
    """Whether a live (not zombie) process other than init and this agent exists in the namespace."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            return True
    return False


def apply_limits(limits: dict) -> None:
    """Resource limits every command inherits (a backstop where cgroups are missing)."""
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, "RLIMIT_" + name), (int(value), int(value)))


def start_background(agent: Agent, command: str) -> None:
    """The sandbox's start command: detached, its output discarded, reaped when it ends."""
    pid, _ = spawn(["/bin/sh", "-c", command], agent.base_env, agent.default_cwd, capture=False)
    agent.children.add(pid)
    on_exit(agent.loop, pid, lambda status: agent.children.discard(pid))


def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    apply_limits(config.get("rlimits", {}))
    agent = Agent(config)
    if config.get("start_command"):
        start_background(agent, config["start_command"])
    agent.serve()


if __name__ == "__main__":
    main()
