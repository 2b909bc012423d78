// Tests of `kiln report` through the real executable: the page it writes is well-formed HTML
// that loads nothing from outside itself (checked by tests/tools/report_page_check.py with the
// system python3's html.parser) and holds every section, every stage, every kernel and the
// pictures, for the sample MLP, CNN (convolution) and attention (folded constants) models and a
// .pt2 program; the section list of the MLP's page is a golden file; a second report of the
// same model is a cache hit; a real headless browser (Debian's chromium) loads the page without
// a console message and runs its script; and the one-line errors of bad flags and files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "sample_models.h"
#include "tests/support/golden.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_usage_error;
using cli_test::expect_user_error;
using cli_test::read_file;
using cli_test::sample_model;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kPt2 = std::string(KILN_SOURCE_DIR) + "/tests/data/pt2/";
const std::vector<std::string> kSections = {"compile", "guards", "times", "stages", "kernels", "memory", "warnings"};
const std::vector<std::string> kCpuStages = {"traced", "functional", "decomposed", "simplified", "loops", "scheduled", "cpp"};

// Runs a shell command; its exit status and stdout.
CliResult shell(const std::string& command, const fs::path& scratch) {
  const fs::path out = scratch / "shell_out.txt", err = scratch / "shell_err.txt";
  int raw = std::system((command + " >" + out.string() + " 2>" + err.string()).c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

class ReportCommand : public cli_test::KilnCliTest {
 protected:
  // Writes the report of `model` with `flags` into dir_/NAME.html; returns the page.
  std::string report(const std::string& model, const std::string& name, const std::string& flags = "") {
    CliResult result = kiln("report " + model + " -o " + (dir_ / (name + ".html")).string() + " " + flags);
    EXPECT_EQ(result.status, 0) << result.out << result.err;
    EXPECT_THAT(result.out, HasSubstr("wrote " + (dir_ / (name + ".html")).string()));
    return read_file(dir_ / (name + ".html"));
  }

  // The ids of the page's sections, as the checker reads them; fails the test when the page is
  // not well-formed or loads anything from outside itself.
  std::vector<std::string> checked_sections(const std::string& name) {
    CliResult check = shell("python3 " + std::string(KILN_SOURCE_DIR) + "/tests/tools/report_page_check.py " +
                                (dir_ / (name + ".html")).string(),
                            dir_);
    EXPECT_EQ(check.status, 0) << name << ": " << check.out << check.err;
    return lines_of(check.out);
  }

  // Every section, every stage of `stages`, and a section per kernel the page counts.
  void expect_every_section(const std::string& name, const std::string& page, const std::vector<std::string>& stages) {
    std::vector<std::string> sections = checked_sections(name);
    for (const std::string& id : kSections) EXPECT_TRUE(contains(sections, id)) << name << " lacks section " << id;
    for (const std::string& stage : stages) EXPECT_TRUE(contains(sections, "stage-" + stage)) << name << " lacks stage " << stage;
    int kernels = 0;
    for (const std::string& id : sections) kernels += id.rfind("kernel-", 0) == 0;
    EXPECT_GT(kernels, 0) << name;
    EXPECT_THAT(page, HasSubstr(std::to_string(kernels) + (kernels == 1 ? " kernel," : " kernels,")));
    // The graph stages as pictures (Graphviz), and the memory plan's picture.
    size_t graph_pictures = 0;
    for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) ++graph_pictures;
    EXPECT_GE(graph_pictures, 5u) << name;  // four graph stages and the memory plan
    EXPECT_THAT(page, HasSubstr("<svg class=\"memory-plan\""));
    EXPECT_THAT(page, HasSubstr("Peak workspace: <b>"));
    EXPECT_THAT(page, Not(HasSubstr("http://"))) << name;
    EXPECT_THAT(page, Not(HasSubstr("https://"))) << name;
  }
};

TEST_F(ReportCommand, ThePageOfEachSampleHoldsEverySection) {
  for (const char* model : {"mlp", "cnn", "attention"}) {
    std::string page = report(sample_model(model), model);
    expect_every_section(model, page, kCpuStages);
    EXPECT_THAT(page, HasSubstr("<span class=\"miss\">miss</span>")) << model;
    EXPECT_THAT(page, HasSubstr("cache key")) << model;
    EXPECT_THAT(page, HasSubstr("generated code")) << model;
  }
}

// The stage texts are exactly what `kiln dump --stage S` prints (escaped).
TEST_F(ReportCommand, StageTextsAreTheDumps) {
  std::string page = report(sample_model("attention"), "attention", "--target none");
  for (const char* stage : {"simplified", "scheduled"}) {
    CliResult dump = kiln("dump " + sample_model("attention") + " --stage " + stage);
    ASSERT_EQ(dump.status, 0) << dump.err;
    std::string escaped;
    for (char c : dump.out) escaped += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;" : c == '\'' ? "&#39;" : std::string(1, c);
    EXPECT_THAT(page, HasSubstr("<pre>" + escaped + "</pre>")) << stage;
  }
  // The attention sample folds its causal mask into a constant.
  EXPECT_THAT(page, HasSubstr("_folded_"));
  EXPECT_THAT(page, HasSubstr("not compiled (target none"));
  EXPECT_THAT(page, Not(HasSubstr("id=\"stage-cpp\"")));
}

TEST_F(ReportCommand, APt2ProgramWithSources) {
  std::string page = report(kPt2 + "cnn_train_core.pt2", "cnn_train_core", "--show-source");
  expect_every_section("cnn_train_core", page, kCpuStages);
  EXPECT_THAT(page, HasSubstr(".py:"));  // the fused nodes' lines in the exporting script
}

TEST_F(ReportCommand, TheSectionListOfTheMlpPage) {
  report(sample_model("mlp"), "mlp", "--target none");
  std::string sections;
  for (const std::string& id : checked_sections("mlp")) sections += id + "\n";
  test_support::expect_matches_golden(sections, "tests/tools/golden/report_sections_mlp.txt");
}

TEST_F(ReportCommand, GuardsMemoryAndCacheHit) {
  std::string first = report(sample_model("mlp"), "first", "--dim s0=64");
  EXPECT_THAT(first, HasSubstr("input &#39;x&#39; dim 0 binds s0"));
  EXPECT_THAT(first, HasSubstr("input &#39;x&#39; dim 1 == 784"));
  EXPECT_THAT(first, HasSubstr("<code>s0=64</code>"));
  std::string second = report(sample_model("mlp"), "second", "--dim s0=64");
  EXPECT_THAT(second, HasSubstr("<span class=\"hit\">hit</span>"));
}

// A result the memory plan writes over a residual that dies at its add shares that residual's bar
// in the picture, and its label says so.
TEST_F(ReportCommand, AResultInPlaceOfAResidualIsLabelled) {
  std::ofstream(dir_ / "residual.kiln")
      << "graph():\n"
         "    %x : f32[64, 64] = placeholder[target=x]\n"
         "    %w : f32[64, 64] = placeholder[target=w]\n"
         "    %mm : f32[64, 64] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
         "    %r : f32[64, 64] = call_function[target=relu](args = (%mm,), kwargs = {})\n"
         "    %h : f32[64, 64] = call_function[target=matmul](args = (%r, %w), kwargs = {})\n"
         "    %m2 : f32[64, 64] = call_function[target=matmul](args = (%h, %w), kwargs = {})\n"
         "    %y : f32[64, 64] = call_function[target=add](args = (%m2, %r), kwargs = {})\n"
         "    %out : f32[64, 64] = call_function[target=matmul](args = (%y, %w), kwargs = {})\n"
         "    return (out,)\n";
  std::string page = report((dir_ / "residual.kiln").string(), "residual");
  EXPECT_THAT(page, HasSubstr("y (in place of r)"));
}

// A node the generated code leaves to its reference kernel is listed as a fallback; a damaged
// cache entry is rebuilt, and the warning the driver printed is on the page too.
TEST_F(ReportCommand, FallbacksAndWarnings) {
  std::ofstream(dir_ / "cumsum.kiln") << "graph():\n"
                                         "    %x : f32[4, 8] [num_users=1] = placeholder[target=x]\n"
                                         "    %c : f32[4, 8] [num_users=1] = call_function[target=cumsum](args = (%x, 1), kwargs = {})\n"
                                         "    return (c,)\n";
  const std::string model = (dir_ / "cumsum.kiln").string();
  std::string first = report(model, "first");
  EXPECT_THAT(first, HasSubstr("<li>c (cumsum) in kernel0_c: run on the host by its reference kernel</li>"));
  EXPECT_THAT(first, HasSubstr("<p>No warnings.</p>"));
  std::smatch key;
  std::string page_key = first;
  ASSERT_TRUE(std::regex_search(page_key, key, std::regex("cache key</th><td><code>([0-9a-f]+)</code>")));
  {
    std::fstream so(dir_ / "cache" / "entries" / key[1].str() / "module.so", std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(so.good());
    so.seekp(100);
    char byte = 0;
    so.read(&byte, 1);
    so.seekp(100);
    byte = char(byte ^ 0x5A);
    so.write(&byte, 1);
  }
  CliResult second = kiln("report " + model + " -o " + (dir_ / "second.html").string());
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_THAT(second.err, HasSubstr("kiln: warning: the compile cache entry " + key[1].str()));
  std::string page = read_file(dir_ / "second.html");
  EXPECT_THAT(page, HasSubstr("<li>the compile cache entry " + key[1].str()));
  EXPECT_THAT(page, HasSubstr("it was rebuilt</li>"));
}

// Without Graphviz's dot each graph stage says so in one line (the page is still whole); a compile
// that fails still leaves the page, saying why, and the command fails with the compile's error.
TEST_F(ReportCommand, WithoutDotAndWhenTheCompileFails) {
  CliResult no_dot = kiln("report " + sample_model("mlp") + " -o " + (dir_ / "no_dot.html").string() + " --target none",
                          "PATH=/nonexistent");
  ASSERT_EQ(no_dot.status, 0) << no_dot.err;
  std::string page = read_file(dir_ / "no_dot.html");
  size_t notes = 0;
  const std::string note = "No picture: Graphviz&#39;s dot is not installed (install graphviz)";
  for (size_t at = page.find(note); at != std::string::npos; at = page.find(note, at + 1)) ++notes;
  EXPECT_EQ(notes, 4u);  // traced, functional, decomposed, simplified
  checked_sections("no_dot");

  CliResult failed = kiln("report " + sample_model("mlp") + " -o " + (dir_ / "failed.html").string(), "CXX=/bin/false");
  EXPECT_EQ(failed.status, 1);
  EXPECT_THAT(failed.err, ::testing::StartsWith("kiln: error: the compile for cpu failed (the page shows the stages before it): "
                                                "the C++ compiler '/bin/false' failed"));
  std::string failed_page = read_file(dir_ / "failed.html");
  EXPECT_THAT(failed_page, HasSubstr("The compile failed: the C++ compiler &#39;/bin/false&#39; failed"));
  checked_sections("failed");
}

TEST_F(ReportCommand, BadFlagsAndFilesAreOneLineErrors) {
  const std::string out = (dir_ / "page.html").string();
  expect_usage_error(kiln("report " + sample_model("mlp")), "--out");
  expect_usage_error(kiln("report " + sample_model("mlp") + " -o " + out + " --no-such-flag"), "--no-such-flag");
  expect_user_error(kiln("report " + sample_model("mlp") + " -o " + out + " --target tpu"), "unknown target 'tpu'");
  expect_user_error(kiln("report " + sample_model("mlp") + " -o " + out + " --target interp"), "interp");
  expect_user_error(kiln("report " + sample_model("mlp") + " -o " + out + " --target none --isa avx2"),
                    "--isa applies only to --target cpu");
  expect_user_error(kiln("report " + (dir_ / "missing.kiln").string() + " -o " + out), "missing.kiln");
  std::ofstream(dir_ / "broken.kiln") << "graph():\n    %x : f32[2 = placeholder\n";
  expect_user_error(kiln("report " + (dir_ / "broken.kiln").string() + " -o " + out), "broken.kiln:2:");
  expect_user_error(kiln("report " + sample_model("mlp") + " -o " + (dir_ / "no_folder" / "page.html").string()),
                    "no_folder does not exist");
  expect_user_error(kiln("report " + sample_model("mlp") + " -o " + out + " --dim t9=4 --target none"),
                    "the model has no shape symbol t9");
  expect_user_error(kiln("report " + sample_model("mlp") + " -o " + dir_.string()), "is a directory");
  expect_user_error(kiln("report " + kPt2 + "dynamic_mlp.pt2 -o " + out + " --dim s77=1000 --target none"),
                    "--dim s77=1000 is outside the range [2, 64] the model was compiled for");
  EXPECT_FALSE(fs::exists(out));
  report(sample_model("mlp"), "page", "--target none");
  expect_user_error(kiln("report " + sample_model("mlp") + " -o " + out + " --target none"), "exists (pass --force");
  report(sample_model("mlp"), "page", "--target none --force");
}

// Debian's chromium loads the page headless: the DOM it dumps holds every section and the
// element the page's script adds once it ran, and the console printed nothing.
TEST_F(ReportCommand, AHeadlessBrowserLoadsThePage) {
  CliResult which = shell("command -v chromium", dir_);
  if (which.status != 0) {
    const char* required = std::getenv("KILN_BROWSER_TEST_REQUIRED");
    if (required != nullptr && std::string(required) == "1")
      FAIL() << "chromium is not installed, and KILN_BROWSER_TEST_REQUIRED=1 (scripts/setup installs it)";
    GTEST_SKIP() << "chromium (Debian's package) is not installed: scripts/setup installs it; "
                    "scripts/test (and CI) set KILN_BROWSER_TEST_REQUIRED=1, which makes this a failure";
  }
  report(sample_model("mlp"), "mlp");
  CliResult browser = shell("timeout 60 chromium --headless --disable-gpu --no-sandbox --user-data-dir=" +
                                (dir_ / "chromium-profile").string() + " --enable-logging=stderr --v=0 --dump-dom file://" +
                                (dir_ / "mlp.html").string(),
                            dir_);
  ASSERT_EQ(browser.status, 0) << browser.err;
  EXPECT_THAT(browser.out, HasSubstr("id=\"report-script-ran\""));
  for (const std::string& id : kSections) EXPECT_THAT(browser.out, HasSubstr("<section id=\"" + id + "\"")) << id;
  EXPECT_THAT(browser.err, Not(HasSubstr(":CONSOLE"))) << browser.err;
  EXPECT_THAT(browser.err, Not(HasSubstr("Uncaught"))) << browser.err;
}

}  // namespace
}  // namespace kiln
