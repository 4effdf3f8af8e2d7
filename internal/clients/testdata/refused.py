"""Sends petstore requests it refuses before reading their bodies, each
body whole before the answer is read, and counts how often the Error body
arrives (internal/clients/refused_test.go). Reads on stdin
{"cases": [...], "repeats": N, "client": "http.client" | "http.client close"
| "urllib"}; writes {case name: {"ok": n, "errors": {what: n}}}."""

import http.client
import json
import sys
import urllib.error
import urllib.parse
import urllib.request


def body(size):
    return b'{"name":"' + b"x" * (size - 11) + b'"}'


def headers(case, close):
    h = {"Content-Type": case["content_type"]}
    if case.get("auth"):
        h["Authorization"] = case["auth"]
    if close:
        h["Connection"] = "close"
    return h


def is_error(case, status, data):
    try:
        e = json.loads(data)
    except ValueError:
        return False
    return status == case["status"] and e.get("code") == case["code"] and e.get("status") == case["status"]


def with_http_client(case, repeats, close):
    url = urllib.parse.urlsplit(case["url"])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=20)
    data = body(case["size"])
    for _ in range(repeats):
        try:
            conn.request("POST", url.path, body=data, headers=headers(case, close))
            resp = conn.getresponse()
            yield resp.status, resp.read()
        except Exception as e:  # a reset, a broken pipe: what is counted
            conn.close()
            yield type(e).__name__, b""
    conn.close()


def with_urllib(case, repeats):
    data = body(case["size"])
    for _ in range(repeats):
        req = urllib.request.Request(case["url"], data=data, headers=headers(case, False), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=20) as resp:
                yield resp.status, resp.read()
        except urllib.error.HTTPError as e:
            yield e.code, e.read()
        except Exception as e:
            yield type(e).__name__, b""


def main():
    args = json.load(sys.stdin)
    results = {}
    for case in args["cases"]:
        tally = {"ok": 0, "errors": {}}
        if args["client"] == "urllib":
            answers = with_urllib(case, args["repeats"])
        else:
            answers = with_http_client(case, args["repeats"], args["client"].endswith("close"))
        for status, data in answers:
            if is_error(case, status, data):
                tally["ok"] += 1
            else:
                tally["errors"][str(status)] = tally["errors"].get(str(status), 0) + 1
        results[case["name"]] = tally
    json.dump(results, sys.stdout)


main()
