"""arx-loss against the figures ARX prints for the same nodes (../shared/peers/arx).

The figures were printed by ``java -cp "$(cat /tmp/arx-build/cp.txt)" ArxBench
../shared/data SET CASE 1`` (``loss`` and ``levels``), and with ``-Dnode=...`` (``other``).
Skips when ../shared/data is absent.
"""

from __future__ import annotations

import numpy as np
import pytest
from arx_sets import frequency_table

from blendin.models import KAnonymity
from blendin.search import find
from blendin.search.common import Context

# (set, max_suppression, ARX's node, ARX's loss): cases b (k=5) and c (k=5, 5%)
CHOSEN = [
    ("adult", 0.0, dict(age=4, education=3, **{"marital-status": 2, "native-country": 2},
                        race=1, **{"salary-class": 0}, sex=0, workclass=0),
     0.542210825407941),
    ("adult", 0.05, dict(age=3, education=2, **{"marital-status": 0, "native-country": 1},
                         race=0, **{"salary-class": 0}, sex=0, workclass=1),
     0.17012279194738156),
    ("fars", 0.0, dict(iage=5, ideathday=0, ideathmon=0, ihispanic=2, iinjury=2, irace=2,
                       isex=1), 0.640670712015275),
    ("fars", 0.05, dict(iage=3, ideathday=1, ideathmon=0, ihispanic=0, iinjury=0, irace=0,
                        isex=0), 0.10147063173897553),
]

# -Dnode=...: nodes ARX did not choose, with ARX's loss for them (fars, case c; the
# first two with -Dsupp=0.5). iage's file lists "99" twice: ARX counts both rows.
OTHERS = [
    (0.5, dict(iage=0, ideathday=3, ideathmon=3, ihispanic=2, iinjury=2, irace=2, isex=1),
     0.8115021983364346),
    (0.5, dict(iage=5, ideathday=3, ideathmon=3, ihispanic=2, iinjury=0, irace=2, isex=1),
     0.8114575833710205),
    (0.05, dict(iage=3, ideathday=1, ideathmon=1, ihispanic=0, iinjury=0, irace=0, isex=0),
     0.11071184709097182),
    (0.05, dict(iage=4, ideathday=1, ideathmon=0, ihispanic=0, iinjury=0, irace=0, isex=0),
     0.11248361022895415),
]


@pytest.mark.parametrize(("name", "max_sup", "node", "loss"), CHOSEN)
def test_the_optimum_under_arx_loss_is_arxs(name, max_sup, node, loss):
    ft = frequency_table(name)
    solution = find(ft, [KAnonymity(5)], max_suppression=max_sup, metric="arx-loss")
    assert solution.named_levels == node
    assert solution.score == pytest.approx(loss, rel=1e-12)
    assert solution.utility["arx-loss"] == pytest.approx(loss, rel=1e-12)


@pytest.mark.parametrize(("max_sup", "node", "loss"), OTHERS)
def test_arx_loss_of_other_nodes_is_arxs(max_sup, node, loss):
    ft = frequency_table("fars")
    ctx = Context(ft, [KAnonymity(5)], max_suppression=max_sup, metric="arx-loss",
                  policy=None, weights=None, progress=None)
    result = ctx.check(np.array([node[q] for q in ft.qi_names]))
    assert result.acceptable
    assert ctx.score(result) == pytest.approx(loss, rel=1e-12)
