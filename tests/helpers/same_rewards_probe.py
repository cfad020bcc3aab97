"""One process of a two-process run's start, as far as the reward check (:func:`gdpo_trl.run.fingerprints.
check_same_rewards`): import the rewards named on the command line, touch ``<marker>`` once they are imported, join
the process group (gloo, from the launcher's variables) and compare. Prints ``ok`` or the one line, exits 0 or 2."""

import sys
from pathlib import Path
from types import SimpleNamespace

from gdpo_trl.core.errors import InputError
from gdpo_trl.rewards import get_reward_func
from gdpo_trl.run.fingerprints import check_same_rewards


def main() -> int:
    marker, specs = Path(sys.argv[1]), sys.argv[2:]
    for spec in specs:
        get_reward_func(spec)  # imported as build_reward_funcs imports them
    marker.touch()
    try:
        check_same_rewards(SimpleNamespace(reward_funcs=specs))
    except InputError as error:
        print(error, flush=True)
        return 2
    print("ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
