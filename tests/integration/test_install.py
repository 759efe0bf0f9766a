"""Getting spyglass onto a machine: --version names the commit it was built from;
`cmake --install` puts the binary, spyglass(1), the bash/zsh/fish completions and the docs
where they belong; `cpack -G DEB` makes a package whose dependencies dpkg-shlibdeps found, and
(as root) `dpkg -i` installs it, the installed binary profiles a target, `dpkg -r` removes it.

The build directory is the one of $SPYGLASS_BIN (tests/CMakeLists.txt sets it).
"""
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(harness.SPYGLASS))
COMMIT_SCRIPT = os.path.join(harness.ROOT, "cmake", "build_commit.cmake")


def run(args, **kwargs):
    kwargs.setdefault("timeout", 600)
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          encoding="utf-8", **kwargs)


def git(*args, cwd):
    result = run(["git", "-c", "user.name=spyglass-test", "-c", "user.email=test@localhost"] +
                 list(args), cwd=cwd)
    if result.returncode != 0:
        raise AssertionError("git %s: %s" % (" ".join(args), result.stderr))
    return result.stdout.strip()


class Version(unittest.TestCase):
    def commit_of(self, source):
        output = os.path.join(tempfile.mkdtemp(prefix="spyglass-commit-"), "commit.cpp")
        result = run(["cmake", "-DSOURCE_DIR=" + source, "-DOUTPUT=" + output, "-P",
                      COMMIT_SCRIPT])
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(output) as f:
            return re.search(r'kBuildCommit = "([^"]*)"', f.read()).group(1)

    def test_the_binary_names_its_commit(self):
        version = harness.spyglass("--version", timeout=30).stdout.strip()
        match = re.match(r"^spyglass (\d+\.\d+\.\d+) \(commit ([0-9a-f]+(-dirty)?|unknown)\)$",
                         version)
        self.assertIsNotNone(match, version)
        head = run(["git", "-C", harness.ROOT, "rev-parse", "--short", "HEAD"])
        if head.returncode == 0:
            self.assertEqual(match.group(2).replace("-dirty", ""), head.stdout.strip(),
                             "rebuild: the binary was built from another commit")
        else:
            self.assertEqual(match.group(2), "unknown")

    def test_commit_dirty_and_unknown(self):
        with tempfile.TemporaryDirectory(prefix="spyglass-repo-") as repo:
            self.assertEqual(self.commit_of(repo), "unknown")  # not a git checkout
            git("init", "-q", cwd=repo)
            with open(os.path.join(repo, "file"), "w") as f:
                f.write("one\n")
            git("add", "file", cwd=repo)
            git("commit", "-q", "-m", "one", cwd=repo)
            head = git("rev-parse", "--short", "HEAD", cwd=repo)
            self.assertEqual(self.commit_of(repo), head)
            with open(os.path.join(repo, "file"), "w") as f:
                f.write("two\n")
            self.assertEqual(self.commit_of(repo), head + "-dirty")
            # A directory inside someone else's checkout is not a checkout of its own.
            os.mkdir(os.path.join(repo, "inner"))
            self.assertEqual(self.commit_of(os.path.join(repo, "inner")), "unknown")


class Install(unittest.TestCase):
    def test_cmake_install_puts_everything_in_place(self):
        with tempfile.TemporaryDirectory(prefix="spyglass-install-") as prefix:
            result = run(["cmake", "--install", BUILD, "--prefix", prefix])
            self.assertEqual(result.returncode, 0, result.stderr)
            for path in ("bin/spyglass", "share/man/man1/spyglass.1.gz",
                         "share/bash-completion/completions/spyglass",
                         "share/zsh/vendor-completions/_spyglass",
                         "share/fish/vendor_completions.d/spyglass.fish",
                         "share/doc/spyglass/README.md", "share/doc/spyglass/output-formats.md"):
                self.assertTrue(os.path.isfile(os.path.join(prefix, path)), path)
            installed = os.path.join(prefix, "bin", "spyglass")
            version = run([installed, "--version"])
            self.assertEqual(version.returncode, 0, version.stderr)
            self.assertEqual(version.stdout, harness.spyglass("--version").stdout)
            # The installed page and completions are what this binary writes.
            with gzip.open(os.path.join(prefix, "share/man/man1/spyglass.1.gz"), "rt") as f:
                self.assertEqual(f.read(), harness.spyglass("manpage").stdout)
            with open(os.path.join(prefix, "share/bash-completion/completions/spyglass")) as f:
                self.assertEqual(f.read(), harness.spyglass("completions", "bash").stdout)


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is needed (scripts/setup installs cmake and dpkg-dev)"
                                     % tool)
        cls.dir = tempfile.mkdtemp(prefix="spyglass-deb-")
        result = run(["cpack", "-G", "DEB", "-B", cls.dir, "--config",
                      os.path.join(BUILD, "CPackConfig.cmake")], cwd=BUILD)
        if result.returncode != 0:
            raise AssertionError("cpack failed:\n%s%s" % (result.stdout, result.stderr))
        packages = [f for f in os.listdir(cls.dir) if f.endswith(".deb")]
        if len(packages) != 1:
            raise AssertionError("cpack made %s" % packages)
        cls.deb = os.path.join(cls.dir, packages[0])
        sys.stderr.write("\n%s: %d bytes\n" % (packages[0], os.path.getsize(cls.deb)))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def field(self, name):
        result = run(["dpkg-deb", "-f", self.deb, name])
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout.strip()

    def test_control_fields_and_shlibdeps_dependencies(self):
        self.assertEqual(self.field("Package"), "spyglass")
        version = re.search(r"spyglass (\S+)", harness.spyglass("--version").stdout).group(1)
        self.assertEqual(self.field("Version"), version)
        self.assertEqual(self.field("Architecture"), "amd64")
        depends = [d.strip() for d in self.field("Depends").split(",")]
        names = {re.match(r"[\w.+-]+", d).group(0) for d in depends}
        # What the binary links, as dpkg-shlibdeps names it (with versions), nothing for builds.
        for library in ("libc6", "libstdc++6", "libelf1", "libprotobuf32", "zlib1g"):
            self.assertIn(library, names, depends)
        self.assertTrue(any(re.match(r"libc6 \(>= [\d.]+\)", d) for d in depends), depends)
        self.assertFalse([n for n in names if n.endswith("-dev")], depends)

    def test_contents(self):
        result = run(["dpkg-deb", "-c", self.deb])
        self.assertEqual(result.returncode, 0, result.stderr)
        for path in ("./usr/bin/spyglass", "./usr/share/man/man1/spyglass.1.gz",
                     "./usr/share/bash-completion/completions/spyglass",
                     "./usr/share/zsh/vendor-completions/_spyglass",
                     "./usr/share/fish/vendor_completions.d/spyglass.fish",
                     "./usr/share/doc/spyglass/README.md"):
            self.assertRegex(result.stdout, r"(?m) %s$" % re.escape(path))

    def test_dpkg_installs_it_and_the_installed_binary_profiles(self):
        if os.geteuid() != 0:
            reason = "dpkg -i needs root (CI runs as root)"
            sys.stderr.write("SKIP %s: %s\n" % (self.id(), reason))
            raise unittest.SkipTest(reason)
        if run(["dpkg-query", "-W", "-f=${Status}", "spyglass"]).stdout.startswith("install"):
            self.fail("a spyglass package is installed already: not replacing it (dpkg -r "
                      "spyglass first)")
        installed = run(["dpkg", "-i", self.deb])
        self.addCleanup(lambda: run(["dpkg", "-r", "spyglass"]))
        self.assertEqual(installed.returncode, 0, installed.stdout + installed.stderr)
        version = run(["/usr/bin/spyglass", "--version"])
        self.assertEqual(version.stdout, harness.spyglass("--version").stdout)
        with harness.Target(harness.any_interpreter(), "dump_target.py") as target:
            dump = run(["/usr/bin/spyglass", "dump", "--pid", str(target.pid)])
        self.assertEqual(dump.returncode, 0, dump.stderr)
        self.assertIn("main_inner", dump.stdout)
        if shutil.which("man"):
            where = run(["man", "-w", "spyglass"])
            self.assertEqual(where.stdout.strip(), "/usr/share/man/man1/spyglass.1.gz",
                             where.stderr)
        completion = run(["bash", "--norc", "-c",
                          "source /usr/share/bash-completion/completions/spyglass && "
                          "complete -p spyglass"])
        self.assertEqual(completion.stdout.strip(), "complete -F _spyglass spyglass")
        removed = run(["dpkg", "-r", "spyglass"])
        self.assertEqual(removed.returncode, 0, removed.stderr)
        self.assertFalse(os.path.exists("/usr/bin/spyglass"))


if __name__ == "__main__":
    unittest.main()
