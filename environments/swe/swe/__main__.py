"""``python -m swe validate [--limit N]``: apply every instance's reference fix in a sandbox and run its tests.

For each instance a fresh sandbox of the local backend gets the buggy repository; the FAIL_TO_PASS tests
must fail there (the bug is real), and after the reference fix every FAIL_TO_PASS and PASS_TO_PASS test
must pass. Prints ``validated N/N`` and names each instance that failed (exit status 1 then).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from swe.image import instance_image
from swe.instances import read_instances
from swe.sandbox_repo import apply_patch, prepare_repository, run_instance_tests
from verifiers.errors import SandboxError
from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest

_TEST_TIMEOUT_S = 120.0


async def validate_instance(client: AsyncSandboxClient, instance: dict[str, Any]) -> str | None:
    """None when the instance holds up, else why not."""
    try:
        image_dir = await asyncio.to_thread(instance_image, instance)
    except SandboxError as error:
        return f"sandbox error: {error!r}"
    sandbox = await client.create(CreateSandboxRequest(name="swe-validate", docker_image="python:3.11-slim",
                                                       memory_gb=1, disk_size_gb=0.5, timeout_minutes=10,
                                                       image_dir=image_dir))
    try:
        await client.wait_for_creation(sandbox.id)
        await prepare_repository(client, sandbox.id)
        before = await run_instance_tests(client, sandbox.id, instance, _TEST_TIMEOUT_S)
        if any(before.fail_to_pass):
            return "a FAIL_TO_PASS test passes on the buggy code"
        await apply_patch(client, sandbox.id, instance["fix_patch"])
        after = await run_instance_tests(client, sandbox.id, instance, _TEST_TIMEOUT_S)
        if not after.resolved:
            return (f"after the fix {sum(after.fail_to_pass)}/{len(after.fail_to_pass)} FAIL_TO_PASS and "
                    f"{sum(after.pass_to_pass)}/{len(after.pass_to_pass)} PASS_TO_PASS tests pass"
                    + (" (timed out)" if after.timed_out else ""))
        return None
    except SandboxError as error:
        return f"sandbox error: {error!r}"
    finally:
        await client.delete(sandbox.id)


async def validate(limit: int | None, concurrency: int) -> int:
    instances = read_instances()[:limit] if limit else read_instances()
    gate = asyncio.Semaphore(concurrency)
    started = time.perf_counter()
    async with AsyncSandboxClient() as client:
        async def one(instance: dict[str, Any]) -> str | None:
            async with gate:
                return await validate_instance(client, instance)

        problems = await asyncio.gather(*(one(instance) for instance in instances))
    for instance, problem in zip(instances, problems):
        if problem is not None:
            print(f"FAILED {instance['instance_id']}: {problem}")
    good = sum(problem is None for problem in problems)
    print(f"validated {good}/{len(instances)} in {time.perf_counter() - started:.0f}s")
    return 0 if good == len(instances) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m swe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("validate", help="apply every instance's reference fix in a sandbox")
    check.add_argument("--limit", type=int, help="only the first N instances")
    check.add_argument("--concurrency", type=int, default=2, help="sandboxes at once (default 2)")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be a positive integer")
    if args.concurrency < 1:
        parser.error("--concurrency must be a positive integer")
    return asyncio.run(validate(args.limit, args.concurrency))


if __name__ == "__main__":
    sys.exit(main())
