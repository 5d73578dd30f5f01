"""Strings an attacker controls through tags / resource names."""

HOSTILE = [
    "<!channel>",
    "<!here|here>",
    "<@U123ABC>",
    "<http://evil.example|click me>",
    "ops\r\nBcc: x@evil.example",
    "=cmd|' /C calc'!A0",
    "+SUM(1,1)",
    "@foo",
    "-2+3",
    "\tTAB",
    "team 🚀 ünïcödé & <b>bold</b>",
    "A" * 10_000,
]
