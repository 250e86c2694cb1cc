"""Scenario 4, async task leaks: tasks that are never awaited keep their buffers.

An asyncio service answers each request and, on the side, hands the response to an analytics
uploader. The leaking version fires the upload as a task it never awaits, and keeps the task
in `background` so that the event loop's weak reference does not lose it (the pattern the
asyncio documentation recommends), but the uploader waits for a connection slot that is never
released, so the tasks never finish, and each keeps its response, with a 128 KiB body, alive.
The fixed version awaits the upload with a timeout, so a stuck upload is cancelled and its
response freed.

    python3 examples/async_tasks/async_service.py [--fixed] [--steps REQUESTS] [--dumps DIR] [--budget-mib MIB]
"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402


class Response:
    def __init__(self, request_id):
        self.request_id = request_id
        self.body = os.urandom(128 * 1024)


class AnalyticsUploader:
    """Uploads responses over a pool of connections; the pool's one slot is taken for good by
    an upload that hangs, as a connection to an unreachable collector does."""

    def __init__(self):
        self.slot = asyncio.Semaphore(1)
        self.stuck = asyncio.Event()

    async def upload(self, response):
        async with self.slot:
            await self.stuck.wait()  # never set: the collector does not answer
        return len(response.body)


class Service:
    def __init__(self, fixed):
        self.fixed = fixed
        self.uploader = AnalyticsUploader()
        self.background = set()

    async def handle(self, request_id):
        response = Response(request_id)
        if self.fixed:
            try:
                await asyncio.wait_for(self.uploader.upload(response), timeout=0.001)
            except asyncio.TimeoutError:
                pass  # the upload is dropped, and its response with it
        else:
            task = asyncio.create_task(self.uploader.upload(response))
            self.background.add(task)
            task.add_done_callback(self.background.discard)
        return response.body[:16]


def main():
    example = Example(__doc__.splitlines()[0], default_steps=600)
    global service, loop
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    service = Service(example.fixed)

    def serve(request_id):
        loop.run_until_complete(service.handle(request_id))
        loop.run_until_complete(asyncio.sleep(0))  # let the tasks run up to their wait

    def finish():
        # The leaking version's tasks are still pending at exit; asyncio would print a warning
        # for each as it destroys them.
        loop.set_exception_handler(lambda loop, context: None)

    example.run(warm_up=lambda: [serve(n) for n in range(50)], step=lambda n: serve(50 + n),
                finish=finish)


if __name__ == "__main__":
    main()
