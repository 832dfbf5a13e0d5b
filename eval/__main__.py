"""``python -m eval <probe|finetune|stats|zoo> [key=value ...]`` (see ``eval/cli.py``)."""
from eval.cli import main

if __name__ == "__main__":
    main()
