"""Spec §4 items 1-7: nothing a sandbox does reaches the host's files, secrets, sockets, network or
privileges, or another sandbox. Every test checks the outcome on the host side."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import stat
import uuid
from pathlib import Path

import pytest
from sandbox_fleets import BOTH_TIERS
from sandbox_hostcheck import processes_of_uid, run_python, slot_of

from verifiers.sandboxes import AsyncSandboxClient, SandboxFileNotFoundError, SandboxPathError

TIERS = BOTH_TIERS  # every test here runs on the bubblewrap and the gVisor tier


def _tag() -> str:
    return f"vf-sec-{uuid.uuid4().hex[:10]}"


async def test_writes_outside_the_sandbox_change_nothing_on_the_host(client: AsyncSandboxClient, make_sandbox) -> None:
    tag, hostname = _tag(), socket.gethostname()
    box = await make_sandbox()
    script = (f"for p in /usr/{tag} /etc/{tag} /tmp/{tag} /workspace/../{tag} /{tag} /var/tmp/{tag} /root/{tag}; do "
              "(echo x > $p) 2>/dev/null && echo \"wrote $p\" || echo \"denied $p\"; done; "
              "(echo evil > /proc/sys/kernel/hostname) 2>/dev/null && echo wrote-hostname || echo denied-hostname; "
              "(echo 1 > /proc/sys/vm/drop_caches) 2>/dev/null && echo wrote-sysctl || echo denied-sysctl")
    out = (await client.execute_command(box, script)).stdout
    assert f"denied /usr/{tag}" in out and f"denied /{tag}" in out and "denied-hostname" in out
    assert f"wrote /tmp/{tag}" in out  # the sandbox's own /tmp
    for host_path in (f"/usr/{tag}", f"/etc/{tag}", f"/tmp/{tag}", f"/{tag}", f"/var/tmp/{tag}", f"/root/{tag}"):
        assert not Path(host_path).exists(), host_path
    assert socket.gethostname() == hostname


async def test_host_secrets_and_environment_stay_invisible(client: AsyncSandboxClient, make_sandbox,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tag = _tag()
    planted = {Path(f"/tmp/{tag}-644"): 0o644, Path(f"/tmp/{tag}-600"): 0o600, Path.home() / f"{tag}-home": 0o644}
    for path, mode in planted.items():
        path.write_text(f"SECRET-{tag}")
        path.chmod(mode)
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-planted-{tag}")
    try:
        box = await make_sandbox()
        paths = " ".join(str(p) for p in planted)
        out = await client.execute_command(
            box, f"cat /etc/shadow {paths} 2>&1; cat /proc/1/environ /proc/self/environ 2>&1 | tr '\\0' '\\n'; "
                 "env; ls -a /root /home /run 2>&1; grep -rl planted /proc/*/environ 2>/dev/null")
    finally:
        for path in planted:
            path.unlink()
    text = out.stdout + out.stderr
    assert f"SECRET-{tag}" not in text and "sk-planted" not in text and "OPENAI_API_KEY" not in text
    assert "root:" not in text  # no line of the host's /etc/shadow
    assert "No such file" in text


async def test_symlinks_planted_by_the_sandbox_never_lead_the_host_outside(client: AsyncSandboxClient, make_sandbox,
                                                                            tmp_path: Path, tier: str) -> None:
    shadow = hashlib.sha256(Path("/etc/shadow").read_bytes()).hexdigest()
    outside = Path("/var/tmp") / _tag()
    outside.mkdir()
    box = await make_sandbox()
    await client.execute_command(box, f"ln -s /etc/shadow l; ln -s {outside} d; ln -s /etc dl; mkdir real; "
                                      "echo in > real/f; ln -s real/f inner; mkfifo fifo")
    try:
        for path in ("l", "dl/passwd", "inner", "/workspace/d/x"):
            with pytest.raises((SandboxPathError, SandboxFileNotFoundError)):
                await client.read_file(box, path)
        with pytest.raises(SandboxPathError):
            await client.download_file(box, "l", tmp_path / "stolen")
        # refused, not blocked on; gVisor keeps a FIFO in its own kernel, so the host finds no file at all
        fifo_errors = SandboxPathError if tier == "bubblewrap" else (SandboxPathError, SandboxFileNotFoundError)
        with pytest.raises(fifo_errors):
            await asyncio.wait_for(client.read_file(box, "fifo"), 5)
        for path in ("d/x", "l", "dl/evil", "d/new/dir/x"):
            with pytest.raises(SandboxPathError):
                await client.upload_bytes(box, path, b"pwned")
        assert not (tmp_path / "stolen").exists() and list(outside.iterdir()) == []
        assert hashlib.sha256(Path("/etc/shadow").read_bytes()).hexdigest() == shadow
    finally:
        outside.rmdir()


async def test_a_directory_swapped_for_a_symlink_during_uploads_never_redirects_them(
        client: AsyncSandboxClient, make_sandbox) -> None:
    outside = Path("/var/tmp") / _tag()
    outside.mkdir()
    outside.chmod(0o777)
    box = await make_sandbox()
    swapper = asyncio.create_task(client.execute_command(
        box, f"end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do mkdir -p sw; rm -rf sw; ln -s {outside} sw; "
             "rm -f sw; done", timeout=10))
    try:
        landed = 0
        for i in range(300):
            try:
                await client.upload_bytes(box, f"sw/f{i}", b"x")
                landed += 1
            except (SandboxPathError, SandboxFileNotFoundError, OSError):
                pass
        await swapper
        assert list(outside.iterdir()) == []
    finally:
        for child in outside.iterdir():
            child.unlink()
        outside.rmdir()


async def test_host_unix_sockets_are_unreachable(client: AsyncSandboxClient, make_sandbox) -> None:
    tag = _tag()
    paths = [f"/run/{tag}.sock", f"/tmp/{tag}.sock"]
    listeners = []
    for path in [*paths, f"\0{tag}"]:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(8)
        if not path.startswith("\0"):
            os.chmod(path, 0o777)
        listeners.append(listener)
    try:
        box = await make_sandbox()
        out = await run_python(client, box, (
            "import socket\n"
            f"for path in {[*paths, chr(0) + tag]!r}:\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try:\n"
            "        s.connect(path); print('CONNECTED', repr(path))\n"
            "    except OSError as e:\n"
            "        print('refused', repr(path), type(e).__name__)\n"))
        # the listeners work: a host client connects to each
        for path in [*paths, f"\0{tag}"]:
            probe = socket.socket(socket.AF_UNIX)
            probe.connect(path)
            probe.close()
    finally:
        for listener, path in zip(listeners, [*paths, None], strict=True):
            listener.close()
            if path:
                os.unlink(path)
    assert "CONNECTED" not in out and out.count("refused") == 3


def _host_ip() -> str | None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # no packet is sent; this picks the outgoing interface
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


_NET_PROBE = """
import socket
def tcp(host, port):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); return 'CONNECTED'
    except OSError as e:
        return type(e).__name__
def udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b'leak', (host, port)); return 'sent'
    except OSError as e:
        return type(e).__name__
def dns(name):
    try:
        socket.getaddrinfo(name, 443); return 'RESOLVED'
    except OSError as e:
        return type(e).__name__
"""


async def test_network_is_off_loopback_included(client: AsyncSandboxClient, make_sandbox) -> None:
    tcp_server = socket.socket()
    tcp_server.bind(("0.0.0.0", 0))
    tcp_server.listen(8)
    udp_server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp_server.bind(("127.0.0.1", 0))
    udp_server.settimeout(0.5)
    port, udp_port, host_ip = tcp_server.getsockname()[1], udp_server.getsockname()[1], _host_ip()
    try:
        box = await make_sandbox()
        targets = [("127.0.0.1", port), ("169.254.169.254", 80)] + ([(host_ip, port)] if host_ip else [])
        code = _NET_PROBE + "".join(f"print('tcp', {h!r}, tcp({h!r}, {p}))\n" for h, p in targets)
        code += f"print('udp', udp('127.0.0.1', {udp_port}))\nprint('dns', dns('pypi.org'), dns('localhost'))\n"
        out = await run_python(client, box, code)
        with pytest.raises(socket.timeout):
            udp_server.recvfrom(16)  # nothing arrived on the host's loopback
        # the same probe with network_access=True does reach the host: the test can tell the difference
        open_box = await make_sandbox(network_access=True)
        open_out = await run_python(client, open_box, _NET_PROBE + f"print(tcp('127.0.0.1', {port}))\n")
    finally:
        tcp_server.close()
        udp_server.close()
    assert "CONNECTED" not in out and "RESOLVED" not in out.split("dns")[1].split()[0]
    assert "CONNECTED" in open_out


async def test_privileged_operations_are_refused(client: AsyncSandboxClient, make_sandbox, backend, tier: str) -> None:
    box = await make_sandbox()
    out = await run_python(client, box, """
import ctypes, errno, os, subprocess, time
print('uid', os.getuid(), 'caps', open('/proc/self/status').read().split('CapEff:')[1].split()[0])
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    result = libc.syscall(nr, *args)
    print(name, 'OK' if result >= 0 else errno.errorcode.get(ctypes.get_errno()))
sibling = subprocess.Popen(['sleep', '30'])
time.sleep(0.1)
call('unshare', 272, 0x10000000)
call('mount', 165, b'none', b'/tmp', b'tmpfs', 0, 0)
call('ptrace', 101, 16, sibling.pid, 0, 0)
call('setuid', 105, 0)
call('keyctl', 250, 0, 0, 0)
call('bpf', 321, 0, 0, 0)
call('io_uring_setup', 425, 1, 0)
call('clone_newuser', 56, 0x10000000 | 17, 0, 0, 0, 0)
sibling.kill()
for argv in (['su', '-c', 'id'], ['mount', '-t', 'tmpfs', 'x', '/tmp'], ['unshare', '-U', 'true']):
    r = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL)
    print(argv[0] + '-tool', 'OK' if r.returncode == 0 else 'refused')
""")
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    refused = ["mount", "ptrace", "setuid", "keyctl", "bpf", "io_uring_setup", "clone_newuser", "su-tool",
               "mount-tool"]
    # gVisor lets a process make a user namespace inside its own kernel (as Linux does by default): the
    # capabilities it holds there reach nothing outside it, and mount, ptrace and the rest stay refused after.
    refused += ["unshare", "unshare-tool"] if tier == "bubblewrap" else []
    for name in refused:
        assert lines[name] != "OK", (name, out)
    workspace = slot_of(backend.config.root_dir, box) / "files" / "workspace"
    uid = 1000 if tier == "bubblewrap" else workspace.stat().st_uid  # gVisor's guest runs as the slot's uid
    assert lines["uid"] == f"{uid} caps 0000000000000000"


async def test_sandboxes_cannot_see_or_touch_each_other(client: AsyncSandboxClient, make_sandbox, backend,
                                                        tier: str) -> None:
    tag = _tag()
    a, b = await make_sandbox(), await make_sandbox()
    await client.execute_command(b, f"echo {tag} > /workspace/{tag}; echo x > /tmp/{tag}")
    await client.execute_command(b, "sleep 300 >/dev/null 2>&1 &")
    seen = await client.execute_command(a, f"ls /proc | grep -c '^[0-9]'; ps -eo comm; "
                                           f"find / -name '{tag}*' 2>/dev/null; pkill sleep; echo done")
    assert tag not in seen.stdout and "sleep" not in seen.stdout
    assert int(seen.stdout.split()[0]) <= 5  # init, agent, the shell and its children
    assert tag in (await client.execute_command(b, f"cat /workspace/{tag}; pgrep -c sleep")).stdout
    root = backend.config.root_dir
    slot_a, slot_b = slot_of(root, a), slot_of(root, b)
    owner_a = (slot_a / "files" / "workspace").stat().st_uid
    owner_b = (slot_b / "files" / "workspace").stat().st_uid
    if owner_a != 0 and tier == "gvisor":  # the Sentry runs every guest process: none is a host process
        assert owner_a != owner_b and processes_of_uid(owner_a) == processes_of_uid(owner_b) == []
    elif owner_a != 0:  # per-sandbox uids (as root): distinct, and only B's uid runs B's sleep
        assert owner_a != owner_b
        assert processes_of_uid(owner_b) and not any(
            "sleep" in Path(f"/proc/{p}/comm").read_text() for p in processes_of_uid(owner_a))
    assert stat.S_IMODE((slot_a / "files").stat().st_mode) == 0o711
