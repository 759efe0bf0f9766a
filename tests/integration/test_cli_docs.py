"""Reaching for spyglass without reading the source: spyglass(1) documents exactly the options
`--help` lists, for every subcommand, and renders without groff warnings; the completion
scripts of `spyglass completions` work in bash (sourced, then its completion function run the
way bash runs it), fish (`complete -C`) and zsh (typed into a real zsh in tmux, Tab pressed).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_top import Tmux  # noqa: E402

OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def help_options(*command):
    """The option names `spyglass COMMAND --help` lists (-x and --long)."""
    result = harness.spyglass(*(list(command) + ["--help"]), timeout=30)
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    names = set()
    section = None
    for line in result.stdout.splitlines():
        if re.match(r"^\S.*:$", line):
            section = line
            continue
        if section and section.startswith("Options") and re.match(r"^  +-", line):
            head = re.split(r"\s{2,}", line.strip())[0]
            names.update(OPTION.findall(head))
    return names


def subcommands():
    result = harness.spyglass("--help", timeout=30)
    out, names = result.stdout, []
    block = out[out.index("Subcommands:"):]
    for line in block.splitlines()[1:]:
        match = re.match(r"^  (\S+)", line)
        if match:
            names.append(match.group(1))
    return names


def roff_plain(text):
    return re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\e", "\\")


class ManPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        result = harness.spyglass("manpage", timeout=30)
        if result.returncode != 0:
            raise AssertionError(result.stderr)
        cls.roff = result.stdout
        cls.sections = {}
        for match in re.finditer(r'^\.SH "?([^"\n]+)"?\n(.*?)(?=^\.SH |\Z)', cls.roff, re.M | re.S):
            cls.sections[match.group(1)] = roff_plain(match.group(2))

    def test_every_subcommand_has_a_section_with_exactly_its_options(self):
        commands = subcommands()
        self.assertEqual(set(commands), {"dump", "record", "top", "report", "diff",
                                         "completions", "manpage"})
        for command in commands:
            section = self.sections.get("SPYGLASS " + command.upper())
            self.assertIsNotNone(section, "no section for %s in %s" % (command, list(self.sections)))
            listed = help_options(command)
            self.assertTrue(listed, command)
            for name in listed:
                self.assertRegex(section, r"(?m)^(.*, )?%s\b" % re.escape(name),
                                 "spyglass %s --help lists %s, the man page does not"
                                 % (command, name))
            # And the other way round: every option heading (.TP) is one the parser knows.
            headings = set()
            for heading in re.findall(r"(?m)^\.TP\n(.*)$", self.raw_section(command)):
                headings.update(OPTION.findall(roff_plain(heading)))
            self.assertEqual(headings, listed, command)

    def raw_section(self, command):
        start = self.roff.index('.SH "SPYGLASS %s"' % command.upper())
        end = self.roff.find("\n.SH ", start + 1)
        return self.roff[start:end if end >= 0 else None]

    def test_global_options(self):
        listed = help_options()
        self.assertIn("--version", listed)
        section = self.sections["GLOBAL OPTIONS"]
        for name in listed:
            self.assertIn(name, section)

    def test_renders_without_warnings(self):
        groff = shutil.which("groff")
        if groff is None:
            self.fail("groff is needed to render the man page (package groff-base, installed "
                      "by scripts/setup)")
        result = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z"], input=self.roff,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                                timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        self.assertTrue(self.roff.startswith(".TH SPYGLASS 1 "))
        self.assertIn("spyglass \\- a sampling profiler", self.roff)

    def test_version_in_the_header(self):
        version = harness.spyglass("--version", timeout=30).stdout.strip()
        self.assertIn('"%s"' % version, self.roff.splitlines()[0])


class Completions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="spyglass-completions-")
        for shell in ("bash", "zsh", "fish"):
            result = harness.spyglass("completions", shell, timeout=30)
            if result.returncode != 0:
                raise AssertionError(result.stderr)
            name = {"bash": "spyglass.bash", "zsh": "_spyglass", "fish": "spyglass.fish"}[shell]
            with open(os.path.join(cls.dir, name), "w") as f:
                f.write(result.stdout)
        os.mkdir(os.path.join(cls.dir, "files"))
        open(os.path.join(cls.dir, "files", "profile-old.svg"), "w").close()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def need(self, shell):
        path = shutil.which(shell)
        if path is None:
            self.fail("%s is needed for its completion test (scripts/setup installs it)" % shell)
        return path

    def bash_complete(self, *words):
        """What bash's completion function offers for the command line `words` (the last word
        is the one being completed)."""
        script = ('source %s\ncomplete -p spyglass\n'
                  'COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()\n'
                  '_spyglass 2>/dev/null\nprintf "%%s\\n" "${COMPREPLY[@]}"\n'
                  % os.path.join(self.dir, "spyglass.bash"))
        result = subprocess.run([self.need("bash"), "--norc", "-c", script, "bash"] + list(words),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                                timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0], "complete -F _spyglass spyglass")
        return [line for line in lines[1:] if line]

    def test_bash(self):
        self.assertEqual(set(self.bash_complete("spyglass", "")) & {"dump", "record", "top",
                                                                   "report", "diff",
                                                                   "completions", "manpage"},
                         {"dump", "record", "top", "report", "diff",
                                         "completions", "manpage"})
        self.assertEqual(self.bash_complete("spyglass", "rec"), ["record"])
        self.assertEqual(self.bash_complete("spyglass", "record", "--for"), ["--format"])
        self.assertEqual(self.bash_complete("spyglass", "record", "--hide"), ["--hideprogress"])
        self.assertEqual(sorted(self.bash_complete("spyglass", "record", "-f", "")),
                         sorted(["flamegraph", "folded", "raw", "pprof", "speedscope",
                                 "chrometrace", "calls"]))
        self.assertEqual(self.bash_complete("spyglass", "top", "--mode", ""), ["wall", "cpu"])
        self.assertEqual(self.bash_complete("spyglass", "record", "-r", ""), [])
        self.assertLessEqual({"bash", "fish", "zsh"},
                             set(self.bash_complete("spyglass", "completions", "")))
        prefix = os.path.join(self.dir, "files", "prof")
        self.assertEqual(self.bash_complete("spyglass", "record", "-o", prefix),
                         [prefix + "ile-old.svg"])
        self.assertIn("--subprocesses", self.bash_complete("spyglass", "dump", "--sub"))
        with harness.Target(harness.any_interpreter(), "dump_target.py") as target:
            self.assertIn(str(target.pid), self.bash_complete("spyglass", "dump", "--pid", ""))
        self.assertIn("sh", self.bash_complete("spyglass", "record", "--", "sh"))

    def fish_complete(self, line):
        script = "source %s; complete -C %s" % (os.path.join(self.dir, "spyglass.fish"),
                                                "'" + line.replace("'", "\\'") + "'")
        result = subprocess.run([self.need("fish"), "--no-config", "-c", script],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                                timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        return [line.split("\t")[0] for line in result.stdout.splitlines()]

    def test_fish(self):
        self.assertTrue({"dump", "record", "top", "completions"} <= set(self.fish_complete(
            "spyglass ")))
        self.assertEqual(self.fish_complete("spyglass record --for"), ["--format"])
        self.assertEqual(sorted(self.fish_complete("spyglass record --format ")),
                         sorted(["flamegraph", "folded", "raw", "pprof", "speedscope",
                                 "chrometrace", "calls"]))
        self.assertIn("--full-filenames", self.fish_complete("spyglass dump --full"))
        self.assertNotIn("--hideprogress", self.fish_complete("spyglass dump --hide"))
        self.assertEqual(sorted(self.fish_complete("spyglass completions ")),
                         ["bash", "fish", "zsh"])

    def test_zsh(self):
        zsh = self.need("zsh")
        if shutil.which("tmux") is None:
            self.fail("tmux is needed for the zsh completion test (scripts/setup installs it)")
        tmux = Tmux(120, 20)
        self.addCleanup(tmux.close)
        tmux.type_line("%s -f" % zsh)
        tmux.type_line("fpath=(%s $fpath); autoload -Uz compinit; compinit -u; PS1='zsh> '"
                       % self.dir)
        tmux.wait_for(lambda s: s.rstrip().endswith("zsh>"), "zsh's prompt")
        tmux.tmux("send-keys", "-t", "top", "-l", "spyglass record --for")
        tmux.keys("Tab")
        screen = tmux.wait_for(lambda s: "spyglass record --format" in s, "--format completed")
        tmux.keys("C-u")
        tmux.tmux("send-keys", "-t", "top", "-l", "spyglass completions f")
        tmux.keys("Tab")
        screen = tmux.wait_for(lambda s: "spyglass completions fish" in s, "fish completed")
        self.assertNotIn("command not found", screen)


if __name__ == "__main__":
    unittest.main()
