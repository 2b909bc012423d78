#!/usr/bin/env python3
"""Checks a page written by `kiln report` (tests/tools/report_command_test.cpp runs it with the
system python3): every element is closed in order (void elements and <x/> excepted), nothing is
loaded from outside the page (no <link>, no src=, no href but to '#...', no url(...) or @import),
and prints the id of every <section>, one per line. Exit 1 with one line saying what is wrong."""
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class PageChecker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open = []
        self.sections = []
        self.problems = []
        self.in_style = False

    def where(self):
        line, column = self.getpos()
        return f"line {line} column {column + 1}"

    def check_attributes(self, tag, attrs):
        for name, value in attrs:
            if name == "src":
                self.problems.append(f"<{tag} src=...> loads from outside the page at {self.where()}")
            if name in ("href", "xlink:href") and not (value or "").startswith("#"):
                self.problems.append(f"<{tag} {name}={value!r}> points outside the page at {self.where()}")
        if tag == "link":
            self.problems.append(f"<link> at {self.where()}")

    def handle_starttag(self, tag, attrs):
        self.check_attributes(tag, attrs)
        if tag == "section":
            self.sections.append(dict(attrs).get("id", ""))
        if tag == "style":
            self.in_style = True
        if tag not in VOID:
            self.open.append((tag, self.where()))

    def handle_startendtag(self, tag, attrs):
        self.check_attributes(tag, attrs)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if tag == "style":
            self.in_style = False
        if not self.open:
            self.problems.append(f"</{tag}> closes nothing at {self.where()}")
            return
        opened, at = self.open.pop()
        if opened != tag:
            self.problems.append(f"</{tag}> at {self.where()} closes <{opened}> opened at {at}")

    def handle_data(self, data):
        if self.in_style and ("url(" in data or "@import" in data):
            self.problems.append(f"the style loads from outside the page at {self.where()}")


def main():
    with open(sys.argv[1], encoding="utf-8") as page:
        text = page.read()
    if not text.startswith("<!DOCTYPE html>"):
        print("the page does not start with <!DOCTYPE html>")
        return 1
    checker = PageChecker()
    checker.feed(text)
    checker.close()
    if checker.open:
        tag, at = checker.open[-1]
        checker.problems.append(f"<{tag}> opened at {at} is never closed")
    if checker.problems:
        print(checker.problems[0])
        return 1
    for section in checker.sections:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
