import pytest

from kernelarc.memory.text import ELLIPSIS, check_cap, clip_text


def test_clip_keeps_text_that_fits_and_strips_it():
    assert clip_text("  split K over 4 stages \n", 160) == "split K over 4 stages"


def test_clip_cuts_at_a_word_boundary_with_an_ellipsis():
    text = "use a persistent kernel with grouped tile ordering for L2 reuse"
    clipped = clip_text(text, 40)
    assert len(clipped) <= 40
    assert clipped == "use a persistent kernel with grouped" + ELLIPSIS


def test_clip_cuts_inside_a_word_that_is_too_long_to_back_off_from():
    clipped = clip_text("x" * 500, 160)
    assert clipped == "x" * 159 + ELLIPSIS


def test_clip_one_line_collapses_newlines_and_runs_of_spaces():
    assert clip_text("tile\n\n  the   K loop", 160, one_line=True) == "tile the K loop"


def test_clip_keeps_paragraphs_when_not_one_line():
    assert clip_text("changed:\nBLOCK_K 64", 1200) == "changed:\nBLOCK_K 64"


def test_clip_refuses_a_cap_below_one():
    with pytest.raises(ValueError, match="at least 1, got 0"):
        clip_text("abc", 0)


def test_check_cap_quotes_the_length():
    assert check_cap("claim", "ok", 160) == "ok"
    with pytest.raises(ValueError, match="claim has 161 characters, over the cap of 160"):
        check_cap("claim", "c" * 161, 160)
