"""tasks.cancelled: a stream's helper task (a pump, a feeder, a reader) stopped and reaped
in one place, whatever it was doing or had raised, so a handler's ``finally`` never hangs
or re-raises the helper's error over its own."""

from __future__ import annotations

import asyncio

from pykubelet.streaming.tasks import cancelled


def test_a_running_task_is_cancelled_and_awaited() -> None:
    async def main() -> asyncio.Task[None]:
        started = asyncio.Event()

        async def pump() -> None:
            started.set()
            await asyncio.sleep(60)

        task = asyncio.ensure_future(pump())
        await started.wait()
        await cancelled(task)
        return task

    task = asyncio.run(asyncio.wait_for(main(), 5))
    assert task.cancelled()


def test_a_task_that_failed_or_finished_is_reaped_without_raising() -> None:
    async def main() -> None:
        async def boom() -> None:
            raise OSError("connection reset")

        async def fine() -> int:
            return 1

        failed = asyncio.ensure_future(boom())
        done = asyncio.ensure_future(fine())
        await asyncio.sleep(0)
        await cancelled(failed)
        await cancelled(done)
        assert isinstance(failed.exception(), OSError)
        assert done.result() == 1

    asyncio.run(asyncio.wait_for(main(), 5))
