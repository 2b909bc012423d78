// The sampling ops in packages: grid_sample, roi_align and deform_conv2d are fallback nodes (the
// code generator does not lower them) that a package computes with the math of the
// interpreter's kernels (ir/kernels/portable_kernels.h). Small models of each (grid_sample in
// every mode and padding mode, with and without align_corners, in 1-3 spatial dims, on f32, f64
// and f16; roi_align avg and max, aligned or not, fixed and adaptive sampling; deform_conv2d
// with and without mask and bias, groups and offset groups, stride, padding and dilation) run
// as packages to the interpreter's numbers, through symbolic dims, built by `kiln compile` and
// by the package's own CMakeLists.txt; a roi batch index out of range at run time is the
// package's run error with the interpreter's message, naming the node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kiln/npy.h"
#include "tests/packages/package_cli_test.h"
#include "tests/tools/cli_runner.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_user_error;
using cli_test::read_file;
using ::testing::HasSubstr;

class PackageSampling : public cli_test::PackageCliTest {
 protected:
  // Writes `text` as DIR/NAME.kiln and compiles it into the package DIR/NAME_package; returns
  // the model file.
  std::string compile(const std::string& name, const std::string& text) {
    fs::path model = dir_ / (name + ".kiln");
    std::ofstream(model) << text;
    CliResult compiled = kiln("compile " + model.string() + " -o " + (dir_ / (name + "_package")).string());
    EXPECT_EQ(compiled.status, 0) << compiled.err;
    return model.string();
  }

  fs::path package_of(const std::string& name) const { return dir_ / (name + "_package"); }
};

const char* const kGridSampleModel = R"(graph():
    %x : f32[s0, 2, 5, 6] [num_users=9] = placeholder[target=x]
    %grid : f32[s0, 4, 3, 2] [num_users=9] = placeholder[target=grid]
    %line : f32[s0, 3, 7] [num_users=2] = placeholder[target=line]
    %grid1 : f32[s0, 5, 1] [num_users=2] = placeholder[target=grid1]
    %volume : f32[s0, 2, 3, 4, 5] [num_users=2] = placeholder[target=volume]
    %grid3 : f32[s0, 2, 3, 2, 3] [num_users=2] = placeholder[target=grid3]
    %bilinear_zeros : f32[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid), kwargs = {})
    %bilinear_border : f32[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "bilinear", "border", True), kwargs = {})
    %bilinear_reflection : f32[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "bilinear", "reflection", False), kwargs = {})
    %nearest_zeros : f32[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "nearest", "zeros", True), kwargs = {})
    %nearest_reflection : f32[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "nearest", "reflection", True), kwargs = {})
    %bicubic_border : f32[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "bicubic", "border", False), kwargs = {})
    %bicubic_reflection : f32[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "bicubic", "reflection", True), kwargs = {})
    %line_bilinear : f32[s0, 3, 5] [num_users=1] = call_function[target=grid_sample](args = (%line, %grid1, "bilinear", "reflection", True), kwargs = {})
    %line_nearest : f32[s0, 3, 5] [num_users=1] = call_function[target=grid_sample](args = (%line, %grid1, "nearest", "border", False), kwargs = {})
    %volume_bilinear : f32[s0, 2, 2, 3, 2] [num_users=1] = call_function[target=grid_sample](args = (%volume, %grid3, "bilinear", "zeros", False), kwargs = {})
    %volume_nearest : f32[s0, 2, 2, 3, 2] [num_users=1] = call_function[target=grid_sample](args = (%volume, %grid3, "nearest", "reflection", True), kwargs = {})
    %x64 : f64[s0, 2, 5, 6] [num_users=1] = call_function[target=cast](args = (%x, f64), kwargs = {})
    %grid64 : f64[s0, 4, 3, 2] [num_users=1] = call_function[target=cast](args = (%grid, f64), kwargs = {})
    %double_bicubic : f64[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x64, %grid64, "bicubic", "zeros", True), kwargs = {})
    %x16 : f16[s0, 2, 5, 6] [num_users=1] = call_function[target=cast](args = (%x, f16), kwargs = {})
    %half_bilinear : f16[s0, 2, 4, 3] [num_users=1] = call_function[target=grid_sample](args = (%x16, %grid, "bilinear", "border", False), kwargs = {})
    return (bilinear_zeros, bilinear_border, bilinear_reflection, nearest_zeros, nearest_reflection, bicubic_border, bicubic_reflection, line_bilinear, line_nearest, volume_bilinear, volume_nearest, double_bicubic, half_bilinear)
)";

// grid_sample in every mode and padding mode, both align_corners, 1-3 spatial dims, f32, f64
// (coordinates unrounded) and f16 (rounded back as the interpreter rounds): the random grid's
// normal values fall inside and outside [-1, 1].
TEST_F(PackageSampling, GridSampleRunsInPackagesAsInTheInterpreter) {
  std::string model = compile("grids", kGridSampleModel);
  fs::path dir = package_of("grids");
  std::string source = read_file(dir / "grids.cpp");
  EXPECT_THAT(source, HasSubstr("fallback_kernels::grid_sample("));
  EXPECT_THAT(source, HasSubstr("fallback_kernels::GridSampleMode::bicubic, fallback_kernels::GridSamplePadding::reflection, true"));
  for (const char* size : {"1", "3"}) {
    SCOPED_TRACE(std::string("s0=") + size);
    std::string inputs = std::string(" --random-inputs 11 --dim s0=") + size;
    std::map<std::string, Tensor> expected = run_outputs(model + inputs, std::string("interp_") + size);
    EXPECT_EQ(expected.size(), 13u);
    expect_close(run_outputs(dir.string() + inputs, std::string("package_") + size), expected, 1e-6);
  }
}

const char* const kRoiAlignModel = R"(graph():
    %x : f32[2, 3, 8, 7] [num_users=4] = placeholder[target=x]
    %rois : f32[s0, 4] [num_users=4] = placeholder[target=rois]
    %images : i64[s0] [num_users=4] = placeholder[target=images]
    %avg_aligned : f32[s0, 3, 3, 2] [num_users=1] = call_function[target=roi_align](args = (%x, %rois, %images, 3, 2, 2, 1.0, "avg", True), kwargs = {})
    %avg_adaptive : f32[s0, 3, 2, 2] [num_users=1] = call_function[target=roi_align](args = (%x, %rois, %images, 2, 2, 0, 0.5, "avg", False), kwargs = {})
    %max_aligned : f32[s0, 3, 2, 3] [num_users=1] = call_function[target=roi_align](args = (%x, %rois, %images, 2, 3, 0, 1.0, "max", True), kwargs = {})
    %images32 : i32[s0] [num_users=1] = call_function[target=cast](args = (%images, i32), kwargs = {})
    %max_fixed : f32[s0, 3, 1, 2] [num_users=1] = call_function[target=roi_align](args = (%x, %rois, %images32, 1, 2, 3, 0.75, "max", False), kwargs = {})
    return (avg_aligned, avg_adaptive, max_aligned, max_fixed)
)";

// Boxes (x1, y1, x2, y2) inside, across and outside the 7x8 image, one of them degenerate.
Tensor boxes() {
  return Tensor::from_doubles({5, 4},
                              std::vector<double>{0.5, 1.0, 5.5, 6.0, -2.0, -1.5, 3.0, 9.5, 2.25, 3.75, 2.25, 4.0,
                                                  4.0, 0.0, 9.0, 12.0, 1.0, 2.0, 6.5, 7.5},
                              DType::f32);
}

// roi_align avg and max, aligned or not, with sampling_ratio fixed and adaptive (0), scaled
// boxes, i64 and i32 batch indices, through a symbolic box count.
TEST_F(PackageSampling, RoiAlignRunsInPackagesAsInTheInterpreter) {
  std::string model = compile("boxes", kRoiAlignModel);
  fs::path dir = package_of("boxes");
  EXPECT_THAT(read_file(dir / "boxes.cpp"), HasSubstr("fallback_kernels::roi_align("));
  write_npy((dir_ / "rois.npy").string(), boxes());
  write_npy((dir_ / "images.npy").string(), Tensor::from_doubles({5}, std::vector<double>{0, 1, 1, 0, 1}, DType::i64));
  std::string inputs = " --random-inputs 5 --input rois=" + (dir_ / "rois.npy").string() +
                       " --input images=" + (dir_ / "images.npy").string();
  std::map<std::string, Tensor> expected = run_outputs(model + inputs, "interp");
  EXPECT_EQ(expected.size(), 4u);
  expect_close(run_outputs(dir.string() + inputs, "package"), expected, 1e-6);
  // Two boxes (s0 = 2).
  write_npy((dir_ / "two_rois.npy").string(),
            Tensor::from_doubles({2, 4}, std::vector<double>{1, 1, 4, 5, 0, 0, 7, 8}, DType::f32));
  write_npy((dir_ / "two_images.npy").string(), Tensor::from_doubles({2}, std::vector<double>{1, 0}, DType::i64));
  inputs = " --random-inputs 6 --input rois=" + (dir_ / "two_rois.npy").string() +
           " --input images=" + (dir_ / "two_images.npy").string();
  expect_close(run_outputs(dir.string() + inputs, "package_two"), run_outputs(model + inputs, "interp_two"), 1e-6);
}

// A batch index out of range at run time: the package's run fails with the interpreter's
// message, naming the node (no crash, no output).
TEST_F(PackageSampling, ARoiBatchIndexOutOfRangeIsTheInterpretersError) {
  std::string model = compile("boxes", kRoiAlignModel);
  write_npy((dir_ / "rois.npy").string(), boxes());
  write_npy((dir_ / "images.npy").string(), Tensor::from_doubles({5}, std::vector<double>{0, 1, 2, 0, 1}, DType::i64));
  std::string bad = " --random-inputs 5 --input rois=" + (dir_ / "rois.npy").string() +
                    " --input images=" + (dir_ / "images.npy").string();
  const std::string message =
      "node %avg_aligned (roi_align): roi_align: batch index 2 of box 2 is out of range for a batch of 2";
  expect_user_error(kiln("run " + model + bad), message);
  expect_user_error(kiln("run " + package_of("boxes").string() + bad), "boxes: run: " + message);
  write_npy((dir_ / "negative.npy").string(), Tensor::from_doubles({5}, std::vector<double>{0, 1, 1, -1, 1}, DType::i64));
  std::string negative = " --random-inputs 5 --input rois=" + (dir_ / "rois.npy").string() +
                         " --input images=" + (dir_ / "negative.npy").string();
  expect_user_error(kiln("run " + package_of("boxes").string() + negative),
                    "boxes: run: node %avg_aligned (roi_align): roi_align: batch index -1 of box 3 is out of range for a batch of 2");
}

const char* const kDeformConvModel = R"(graph():
    %x : f32[s0, 4, 6, 6] [num_users=3] = placeholder[target=x]
    %w_plain : f32[3, 4, 3, 3] [num_users=1] = placeholder[target=w_plain]
    %offset_plain : f32[s0, 18, 4, 4] [num_users=1] = placeholder[target=offset_plain]
    %w_groups : f32[4, 2, 3, 3] [num_users=1] = placeholder[target=w_groups]
    %offset_groups : f32[s0, 36, 3, 3] [num_users=1] = placeholder[target=offset_groups]
    %mask_groups : f32[s0, 18, 3, 3] [num_users=1] = placeholder[target=mask_groups]
    %bias : f32[4] [num_users=1] = placeholder[target=bias]
    %w_dilated : f32[2, 4, 2, 2] [num_users=1] = placeholder[target=w_dilated]
    %offset_dilated : f32[s0, 32, 8, 8] [num_users=1] = placeholder[target=offset_dilated]
    %mask_dilated : f32[s0, 16, 8, 8] [num_users=1] = placeholder[target=mask_dilated]
    %plain : f32[s0, 3, 4, 4] [num_users=1] = call_function[target=deform_conv2d](args = (%x, %w_plain, %offset_plain), kwargs = {})
    %grouped : f32[s0, 4, 3, 3] [num_users=1] = call_function[target=deform_conv2d](args = (%x, %w_groups, %offset_groups, %mask_groups, %bias, [2, 2], [1, 1], [1, 1], 2, 2), kwargs = {})
    %dilated : f32[s0, 2, 8, 8] [num_users=1] = call_function[target=deform_conv2d](args = (%x, %w_dilated, %offset_dilated, %mask_dilated, None, [1, 1], [2, 2], [2, 2], 1, 4), kwargs = {})
    return (plain, grouped, dilated)
)";

// deform_conv2d without mask and bias; with both, groups 2, offset groups 2 and stride 2; with
// a mask, 4 offset groups, padding and dilation 2. Offsets are the random inputs' normal values.
TEST_F(PackageSampling, DeformConv2dRunsInPackagesAsInTheInterpreter) {
  std::string model = compile("deform", kDeformConvModel);
  fs::path dir = package_of("deform");
  std::string source = read_file(dir / "deform.cpp");
  EXPECT_THAT(source, HasSubstr("fallback_kernels::deform_conv2d("));
  EXPECT_THAT(source, HasSubstr("&mask, &bias"));
  EXPECT_THAT(source, HasSubstr("&mask, nullptr"));
  for (const char* size : {"1", "2"}) {
    SCOPED_TRACE(std::string("s0=") + size);
    std::string inputs = std::string(" --random-inputs 13 --dim s0=") + size;
    std::map<std::string, Tensor> expected = run_outputs(model + inputs, std::string("interp_") + size);
    EXPECT_EQ(expected.size(), 3u);
    expect_close(run_outputs(dir.string() + inputs, std::string("package_") + size), expected, 1e-6);
  }
}

// A package of every sampling op built from its own CMakeLists.txt (the fallback kernels need
// the standard library alone): its static library, linked whole into a shared one put in the
// place of the package's own, runs to the interpreter's numbers.
TEST_F(PackageSampling, APackageOfSamplingOpsBuildsWithItsCMakeLists) {
  std::string model = compile("sampling", R"(graph():
    %x : f32[2, 4, 6, 6] [num_users=3] = placeholder[target=x]
    %grid : f32[2, 3, 3, 2] [num_users=1] = placeholder[target=grid]
    %rois : f32[3, 4] [num_users=1] = placeholder[target=rois]
    %images : i64[3] [num_users=1] = placeholder[target=images]
    %weight : f32[2, 4, 3, 3] [num_users=1] = placeholder[target=weight]
    %offset : f32[2, 18, 4, 4] [num_users=1] = placeholder[target=offset]
    %mask : f32[2, 9, 4, 4] [num_users=1] = placeholder[target=mask]
    %sampled : f32[2, 4, 3, 3] [num_users=1] = call_function[target=grid_sample](args = (%x, %grid, "bicubic", "border", True), kwargs = {})
    %pooled : f32[3, 4, 2, 2] [num_users=1] = call_function[target=roi_align](args = (%x, %rois, %images, 2, 2, 0, 1.0, "max", True), kwargs = {})
    %deformed : f32[2, 2, 4, 4] [num_users=1] = call_function[target=deform_conv2d](args = (%x, %weight, %offset, %mask), kwargs = {})
    return (sampled, pooled, deformed)
)");
  fs::path dir = package_of("sampling");
  fs::path build = dir_ / "cmake_build";
  std::string log;
  fs::path copy = dir_ / "sampling_cmake";
  fs::copy(dir, copy, fs::copy_options::recursive);
  fs::remove(copy / "libsampling.so");
  ASSERT_EQ(shell("cmake -S " + dir.string() + " -B " + build.string() + " && cmake --build " + build.string() +
                      " -j2 && c++ -shared -fopenmp -o " + (copy / "libsampling.so").string() + " -Wl,--whole-archive " +
                      (build / "libsampling.a").string() + " -Wl,--no-whole-archive",
                  &log),
            0)
      << log;
  write_npy((dir_ / "rois.npy").string(),
            Tensor::from_doubles({3, 4}, std::vector<double>{0, 0, 4, 4, 1.5, 2, 5.5, 5, -1, 3, 2, 7}, DType::f32));
  write_npy((dir_ / "images.npy").string(), Tensor::from_doubles({3}, std::vector<double>{1, 0, 1}, DType::i64));
  std::string inputs = " --random-inputs 3 --input rois=" + (dir_ / "rois.npy").string() +
                       " --input images=" + (dir_ / "images.npy").string();
  expect_close(run_outputs(copy.string() + inputs, "package"), run_outputs(model + inputs, "interp"), 1e-6);
}

}  // namespace
}  // namespace kiln
