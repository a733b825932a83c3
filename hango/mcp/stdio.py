"""A catalog server's process and its stdio transport: JSON-RPC lines both ways, each answer capped.

The SDK's stdio client reads a line however long it grows and skips a line that
is not JSON-RPC, so a call waiting on such a server waits for its deadline. This
transport ends the stream instead and says why (``ended``): a line past the answer
cap, a line that is not JSON-RPC, or the process ending; the session then fails
every request in flight at once (the SDK settles them as "connection closed")
and the connection is not used again. Closing the transport closes the server's
stdin, then terminates the process, then kills it, each step bounded.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Callable

import anyio
from anyio.abc import Process
from mcp import types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from hango.mcp.catalog import CatalogServer

EXIT_WAIT = 2.0  # seconds a server gets to exit after its stdin closes, and again after SIGTERM


@contextlib.asynccontextmanager
async def stdio_streams(
    command: CatalogServer, cap: int, ended: Callable[[str], None]
) -> AsyncIterator[tuple]:
    """Start ``command`` and yield the session's (read, write) streams; ``ended`` hears why its answers
    stopped; the process ends with the block."""
    process = await anyio.open_process(
        [command.command, *command.args],
        env=get_default_environment() | command.env,
        stderr=subprocess.DEVNULL,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with read_writer:
            ended(await _relay(process, read_writer, cap))

    async def write() -> None:
        assert process.stdin is not None
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with write_reader:
                async for message in write_reader:
                    line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(line.encode())

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            tasks.cancel_scope.cancel()


async def _relay(process: Process, out: anyio.abc.ObjectSendStream, cap: int) -> str:
    """Send each JSON-RPC line of the process's stdout to ``out``; why it stopped."""
    assert process.stdout is not None
    buffer = bytearray()
    try:
        async for chunk in process.stdout:
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError:
                    return "it answered something that is not JSON-RPC"
                await out.send(SessionMessage(message))
            if len(buffer) > cap:
                return f"the answer passed {cap:,} bytes"
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        return "the connection closed"
    return "its process ended"


async def _stop(process: Process) -> None:
    """Close the server's stdin, then SIGTERM, then SIGKILL it: each step waits ``EXIT_WAIT`` at most."""
    closing = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)
    with contextlib.suppress(*closing):
        if process.stdin is not None:
            await process.stdin.aclose()
    for end in (None, process.terminate, process.kill):
        if end is not None:
            with contextlib.suppress(ProcessLookupError):
                end()
        with anyio.move_on_after(EXIT_WAIT):
            await process.wait()
            break
    with contextlib.suppress(*closing), anyio.move_on_after(EXIT_WAIT):
        await process.aclose()
