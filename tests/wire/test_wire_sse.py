"""SSE framing: events split across reads, CRLF, comments, multi-line data, malformed lines."""

from __future__ import annotations

import json

from specmeter.wire.sse import SSEParser, encode_data, encode_done


def test_round_trip_and_split_reads() -> None:
    wire = encode_data({"a": 1, "text": "héllo"}) + encode_data({"b": 2}) + encode_done()
    parser = SSEParser()
    events: list[bytes] = []
    for i in range(0, len(wire), 3):  # three bytes at a time: every boundary falls mid-line somewhere
        events += parser.feed(wire[i : i + 3])
    assert [json.loads(e) if e != b"[DONE]" else e for e in events] == [
        {"a": 1, "text": "héllo"},
        {"b": 2},
        b"[DONE]",
    ]
    assert parser.malformed == 0


def test_crlf_comments_fields_and_multiline_data() -> None:
    parser = SSEParser()
    events = parser.feed(b': ping\r\nevent: message\r\nid: 7\r\ndata: {"x":\r\ndata: 1}\r\n\r\n')
    assert events == [b'{"x":\n1}']
    assert json.loads(events[0]) == {"x": 1}
    assert parser.malformed == 0


def test_malformed_lines_are_counted_not_fatal() -> None:
    parser = SSEParser()
    events = parser.feed(b"this is not sse\n\ndata: {}\n\nnope: x\n\n")
    assert events == [b"{}"]
    assert parser.malformed == 2


def test_close_flushes_an_unterminated_last_event() -> None:
    parser = SSEParser()
    assert parser.feed(b'data: {"last": true}') == []
    assert parser.close() == [b'{"last": true}']
