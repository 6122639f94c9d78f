"""sweep.launch: a server that aborts natively is named by its assert, not by the gdb backtrace after it.

llama-server (llama.cpp 0c1e570, built from llama-cpp-python 0.3.36) aborts on a ``GGML_ASSERT``; ggml then
attaches gdb to itself and prints thread notices, the frame it stopped in and a backtrace. Before the fix a
sweep named the frame "#2 0x… in ggml_abort ()" (it says "abort") as the reason. The log below is the tail of
a real one: ``sweep --launch`` with the draft loaded and ``--spec-draft-n-max 0`` for k = 0, at c = 4
(docs/monitoring.md), frames shortened.
"""

from __future__ import annotations

from pathlib import Path

from specmeter.sweep.launch import ServerProcess

ASSERT = (
    "/src/llama.cpp/src/llama-context.cpp:2273: GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed"
)
BEFORE = """\
0.02.971.500 W slot   operator(): id  3 | task 235 | need to evaluate at least 1 token for each active slot
0.02.971.512 W slot   operator(): id  3 | task 235 | n_past was set to 30
"""
GDB = """\
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
0x00007fb55b6f1c17 in __GI___wait4 (pid=17002, stat_loc=0x0, options=0, usage=0x0) at ../wait4.c:30
30\t../sysdeps/unix/sysv/linux/wait4.c: No such file or directory.
#0  0x00007fb55b6f1c17 in __GI___wait4 (pid=17002, stat_loc=0x0, options=0, usage=0x0) at ../wait4.c:30
30\tin ../sysdeps/unix/sysv/linux/wait4.c
#1  0x00007fb55bbb868b in ggml_print_backtrace () from /src/llama.cpp/build/bin/libggml-base.so.0
#2  0x00007fb55bbb87de in ggml_abort () from /src/llama.cpp/build/bin/libggml-base.so.0
#3  0x00007fb55a9e2a26 in llama_context::output_reserve(int) () from /src/llama.cpp/build/bin/libllama.so.0
#4  0x00007fb55a9ea9e2 in llama_context::decode(llama_batch_ext const&) () from libllama.so.0
#7  0x00007fb55b96e798 in server_context_impl::decode(int&, int) () from libllama-server-impl.so
#8  0x00007fb55b972303 in server_context_impl::update_slots() () from libllama-server-impl.so
#12 0x00007fb55b64524a in __libc_start_call_main (main=main@entry=0x5631b7c17180 <main>, argc=22)
58\t../sysdeps/nptl/libc_start_call_main.h: No such file or directory.
#14 0x00005631b7c171b1 in _start ()
[Inferior 1 (process 16955) detached]
"""


def _server(tmp_path: Path, log: str) -> ServerProcess:
    server = ServerProcess("k=0", ["llama-server"], "http://127.0.0.1:9", tmp_path / "server.log")
    server.log.write_text(log, encoding="utf-8")
    return server


def threads(n: int) -> str:
    return "".join(f"[New LWP {16957 + i}]\n" for i in range(n))


def test_the_assert_is_named_not_gdbs_frames(tmp_path: Path) -> None:
    server = _server(tmp_path, BEFORE + ASSERT + "\n" + threads(12) + GDB)
    assert server.last_line() == ASSERT
    message = str(server.died("during level c=4"))
    assert "GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed" in message
    assert "ggml_abort" not in message


def test_a_many_threaded_server_still_names_its_assert(tmp_path: Path) -> None:
    # One "[New LWP]" line per thread: a server with 64 threads pushes the assert far from the end.
    assert _server(tmp_path, BEFORE + ASSERT + "\n" + threads(64) + GDB).last_line() == ASSERT


def test_a_log_of_nothing_but_gdb_still_says_something(tmp_path: Path) -> None:
    # No line of the server's own: gdb's lines are all there is, and the one that says "abort" is named.
    assert "in ggml_abort ()" in _server(tmp_path, threads(2) + GDB).last_line()
