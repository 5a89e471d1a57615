"""The rules the report's verdicts use: interval separation and least-squares slopes."""
import pytest

from study import analysis, report, stats


def ci(mean, hw):
    return stats.MeanCI(5, mean, 0.0, hw)


def test_separated_only_when_intervals_do_not_overlap():
    assert report.separated(ci(10, 1), ci(7, 1)) == 1    # [9, 11] above [6, 8]
    assert report.separated(ci(7, 1), ci(10, 1)) == -1
    assert report.separated(ci(10, 2), ci(7, 2)) == 0    # [8, 12] overlaps [5, 9]
    assert report.separated(ci(10, 1), ci(8, 1)) == 0    # touching at 9: not separated
    assert report.separated(None, ci(1, 0)) == 0


def test_slope_least_squares():
    # y = 2x + 1 exactly; then points (0,0), (1,1), (2,4): slope = sum(dx*dy)/sum(dx^2) = 4/2 = 2
    assert analysis.slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2)
    assert analysis.slope([0, 1, 2], [0, 1, 4]) == pytest.approx(2)
    assert analysis.slope([1, 1], [2, 3]) is None


def test_change_is_relative_to_the_old_value():
    assert report.change(98, 80) == "+22%"   # seed 001: 98 vs 80 responses/s is +22.5%
    assert report.change(65, 100) == "-35%"
    assert report.change(5, 0) == "—"
