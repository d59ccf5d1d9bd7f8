"""The bootstrap's clusters: rows sharing a name key or identical video bytes are one cluster (docs/data.md)."""

from collections.abc import Sequence


def cluster_numbers(keys: Sequence[str], video_hashes: Sequence[str]) -> list[int]:
    """Cluster number of each row: rows sharing a non-empty key or video hash are one cluster (docs/data.md)."""
    parent = list(range(len(keys)))

    def root(item: int) -> int:
        while parent[item] != item:
            parent[item] = parent[parent[item]]  # path halving
            item = parent[item]
        return item

    for values in (keys, video_hashes):
        first_row: dict[str, int] = {}
        for row, value in enumerate(values):
            if value:
                parent[root(row)] = root(first_row.setdefault(value, row))
    numbers: dict[int, int] = {}
    return [numbers.setdefault(root(row), len(numbers)) for row in range(len(parent))]
