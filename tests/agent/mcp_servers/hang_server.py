"""A process that reads MCP requests on stdin and never answers them (not even ``initialize``)."""

import sys

if __name__ == "__main__":
    for _line in sys.stdin:
        pass
