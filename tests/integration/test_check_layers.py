"""scripts/check_layers.py, the layer rule of docs/architecture.md: the real tree passes; an
include of a layer (or of a header) that a layer may not use, planted in a copy of the tree,
fails with the file, the line and what was included.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.py")


def check_layers(root):
    return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True,
                          timeout=60)


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.tree = tempfile.mkdtemp(prefix="spyglass-layers-")
        self.addCleanup(shutil.rmtree, self.tree)
        for part in ("src", "include"):
            shutil.copytree(os.path.join(ROOT, part), os.path.join(self.tree, part))

    def plant(self, relative, text):
        path = os.path.join(self.tree, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def test_the_real_tree_passes(self):
        result = check_layers(ROOT)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")

    def test_the_copy_passes_before_anything_is_planted(self):
        result = check_layers(self.tree)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_writer_including_the_command_line_fails(self):
        self.plant("src/output/planted.cpp",
                   '// planted\n#include "spyglass/model/profile.hpp"\n'
                   '#include "spyglass/cli/options.hpp"\n')
        result = check_layers(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(),
                         "check_layers: src/output/planted.cpp:3: the output layer may not "
                         "include cli/options.hpp")

    def test_a_header_including_a_layer_above_fails(self):
        self.plant("include/spyglass/model/planted.hpp",
                   '#pragma once\n#include "spyglass/output/writer.hpp"\n')
        result = check_layers(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("include/spyglass/model/planted.hpp:2: the model layer may not include "
                      "output/writer.hpp", result.stderr)

    def test_a_reader_may_include_the_raw_codec_but_no_other_writer(self):
        self.plant("src/input/planted.cpp", '#include "spyglass/output/raw_codec.hpp"\n')
        self.assertEqual(check_layers(self.tree).returncode, 0)
        self.plant("src/input/planted.cpp", '#include "spyglass/output/raw_codec.hpp"\n'
                                            '#include "spyglass/output/top_screen.hpp"\n')
        result = check_layers(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("src/input/planted.cpp:2: the input layer may not include "
                      "output/top_screen.hpp", result.stderr)

    def test_delivery_including_the_command_line_fails(self):
        self.plant("src/delivery/planted.cpp", '#include "spyglass/output/writer.hpp"\n'
                                               '#include "spyglass/cli/options.hpp"\n')
        result = check_layers(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("src/delivery/planted.cpp:2: the delivery layer may not include "
                      "cli/options.hpp", result.stderr)

    def test_capture_and_resolve_meet_only_in_the_handoff(self):
        # The sampling thread's room may not reach into the resolver's, nor the other way;
        # both may use the hand-off between them.
        self.plant("src/capture/planted.cpp", '#include "spyglass/handoff/capture_queue.hpp"\n'
                                              '#include "spyglass/resolve/resolver.hpp"\n')
        self.plant("include/spyglass/resolve/planted.hpp",
                   '#pragma once\n#include "spyglass/handoff/native_feedback.hpp"\n'
                   '#include "spyglass/capture/process_sampler.hpp"\n')
        self.plant("src/handoff/planted.cpp", '#include "spyglass/capture/stack_capture.hpp"\n')
        result = check_layers(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("src/capture/planted.cpp:2: the capture layer may not include "
                      "resolve/resolver.hpp", result.stderr)
        self.assertIn("include/spyglass/resolve/planted.hpp:3: the resolve layer may not "
                      "include capture/process_sampler.hpp", result.stderr)
        self.assertIn("src/handoff/planted.cpp:1: the handoff layer may not include "
                      "capture/stack_capture.hpp", result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 3, result.stderr)

    def test_a_folder_that_is_no_known_layer_fails(self):
        self.plant("src/newroom/planted.cpp", "int planted;\n")
        result = check_layers(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("a layer check_layers.py does not know", result.stderr)


if __name__ == "__main__":
    unittest.main()
