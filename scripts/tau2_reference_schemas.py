"""Dump tau2-bench's own tool schemas (the fixture tests/data/tau2_tool_schemas.json).

tau2 builds each tool's OpenAI function from its Python signature and docstring (src/tau2/environment/tool.py
`Tool.openai_schema`) with the pydantic its lock file pins. To regenerate the fixture, run this script with
tau2's own code and pins, outside the project's environment:

    git -C <tau2-bench clone> archive 37199f36 src/tau2 | tar x -C /tmp/tau2ref
    python -m venv /tmp/tau2ref/venv
    /tmp/tau2ref/venv/bin/pip install pydantic==2.10.6 docstring-parser==0.16 loguru toml pyyaml addict deepdiff \
        python-dotenv
    /tmp/tau2ref/venv/bin/python scripts/tau2_reference_schemas.py /tmp/tau2ref/src > tests/data/tau2_tool_schemas.json

The toolkits are built without a database (schemas need none). Output: {side: {tool name: function}}, one
side per toolkit: mock, airline, retail, telecom and telecom_user (the customer's phone).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    from tau2.domains.airline.tools import AirlineTools
    from tau2.domains.mock.tools import MockTools
    from tau2.domains.retail.tools import RetailTools
    from tau2.domains.telecom.tools import TelecomTools
    from tau2.domains.telecom.user_tools import TelecomUserTools

    sides = {
        "mock": MockTools,
        "airline": AirlineTools,
        "retail": RetailTools,
        "telecom": TelecomTools,
        "telecom_user": TelecomUserTools,
    }
    out = {}
    for side, cls in sides.items():
        kit = cls.__new__(cls)
        kit.db = None
        out[side] = {name: tool.openai_schema["function"] for name, tool in sorted(kit.get_tools().items())}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
