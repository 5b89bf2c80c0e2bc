"""How wide wxparaver draws a text in a histogram's table (its grid: bold labels, regular cells, DejaVu
Sans, GTK's default font), so a histogram rendered for a trace opens as wide as its columns.

The advance widths of DejaVu Sans (regular and bold) for ASCII 32..126, in thousandths of an em; the
pixels per em and the cell padding were measured on wxparaver 4.11.4's tables under Xvfb (the Quick
start's MPI time histogram: a column is its widest text plus the padding; labels 13.4 px an em, cells
12.5).  Other characters count as the widest ASCII one (an upper bound)."""

from __future__ import annotations

_REGULAR = (
    "318 401 460 838 636 950 780 275 390 390 500 838 318 361 318 337 636 636 636 636 636 636 636 636 636 636 "
    "337 337 838 838 838 531 1000 684 686 698 770 632 575 775 752 295 295 656 557 863 748 787 603 787 695 635 "
    "611 732 684 989 685 611 685 390 337 390 838 500 500 613 635 550 635 615 352 635 634 278 278 579 278 974 "
    "634 612 635 635 411 521 392 634 592 818 592 592 525 636 337 636 838"
)
_BOLD = (
    "348 456 521 838 696 1002 872 306 457 457 523 838 380 415 380 365 696 696 696 696 696 696 696 696 696 696 "
    "400 400 838 838 838 580 1000 774 762 734 830 683 683 821 837 372 372 775 637 995 837 850 733 850 770 720 "
    "682 812 774 1103 771 724 725 457 365 457 838 500 500 675 716 593 716 678 435 716 712 343 343 665 343 1042 "
    "712 687 716 716 493 595 478 712 652 924 645 652 582 712 365 712 838"
)
WIDTHS = {bold: [int(x) for x in table.split()] for bold, table in ((False, _REGULAR), (True, _BOLD))}
EM_PX = {True: 13.4, False: 12.5}  # a label (bold) and a cell's pixels per em
PAD_PX = 11  # a column's padding and grid line


def text_px(text: str, bold: bool) -> int:
    """Pixels ``text`` takes in wxparaver's table (bold: a row or column label), padding included."""
    widths = WIDTHS[bold]
    em = sum(widths[ord(c) - 32] if 32 <= ord(c) < 127 else max(widths) for c in text) / 1000
    return int(em * EM_PX[bold] + 0.999) + PAD_PX
