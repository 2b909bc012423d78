/* The C interface of Kiln's in-process C++ compiler plugin (libkiln-clang.so, built from
 * compiler/clang_plugin/kiln_clang_plugin.cpp where CMake finds Debian's Clang and LLD libraries).
 * Kiln loads the plugin with dlopen on its first build of generated code (compiler/targets/
 * in_process_compiler.h), so that a process that only loads cached modules never maps LLVM; the
 * interface is plain C so that the plugin and Kiln share no C++ type.
 *
 * A build compiles one translation unit from memory with Clang's libraries (the same front end
 * and optimizer as the clang executable, run in the calling process: no driver, no cc1 and no
 * assembler process), writes the object, and links it into a shared object with LLD's library
 * (no linker process). A precompiled header of the text every module starts with is made once and
 * included by each build (kiln_clang_make_pch). */
#ifndef KILN_CLANG_PLUGIN_H
#define KILN_CLANG_PLUGIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The plugin is built with hidden visibility: these are its only exported symbols. */
#define KILN_CLANG_EXPORT __attribute__((visibility("default")))

/* Bumped when a struct or function below changes: Kiln refuses a plugin of another version. */
#define KILN_CLANG_PLUGIN_ABI 2

/* What kiln_clang_build and kiln_clang_make_pch return. */
enum {
  KILN_CLANG_OK = 0,
  KILN_CLANG_SOURCE_ERROR = 1, /* the compiler rejected the source: `log` holds its diagnostics */
  KILN_CLANG_LINK_ERROR = 2,   /* the linker failed: `log` holds its messages */
  KILN_CLANG_FAILED = 3        /* anything else (bad flags, an unreadable PCH, no output): `log` says */
};

typedef struct KilnClangBuild {
  const char* source_name;  /* the file name diagnostics give the source (it need not exist) */
  const char* source_text;  /* the translation unit's text */
  size_t source_size;
  const char* const* flags; /* compiler flags as the clang driver takes them (-O3, -mavx512f, ...) */
  int flag_count;
  const char* pch;          /* a precompiled header (kiln_clang_make_pch) included first, or NULL */
  const char* object_path;  /* where the object file is written */
  const char* output_path;  /* the shared object linked from it; NULL: the object alone */
  const char* const* link_inputs; /* libraries (paths) the shared object links, in order */
  int link_input_count;
  char* log;                /* diagnostics, NUL-terminated, truncated to log_capacity */
  size_t log_capacity;
} KilnClangBuild;

KILN_CLANG_EXPORT int kiln_clang_build(const KilnClangBuild* build);

/* Links `objects` (object files) with `link_inputs` into the shared object `output_path`, as
 * kiln_clang_build links its one object: a module compiled in several translation units. */
KILN_CLANG_EXPORT int kiln_clang_link(const char* const* objects, int object_count, const char* output_path,
                                      const char* const* link_inputs, int link_input_count, char* log,
                                      size_t log_capacity);

/* Parses `header_text` (named `header_name` in diagnostics) with `flags` and writes it as a
 * precompiled header to `pch_path`; the flags of every build that includes it must match. */
KILN_CLANG_EXPORT int kiln_clang_make_pch(const char* header_name, const char* header_text, size_t header_size,
                        const char* const* flags, int flag_count, const char* pch_path, char* log,
                        size_t log_capacity);

/* KILN_CLANG_PLUGIN_ABI of the plugin. */
KILN_CLANG_EXPORT int kiln_clang_abi(void);

/* The compiler and linker, for messages and cache keys ("clang 14.0.6, LLD 14.0.6"). */
KILN_CLANG_EXPORT const char* kiln_clang_identity(void);

/* NULL when the plugin can build here, else why not (Clang's builtin headers missing, ...). */
KILN_CLANG_EXPORT const char* kiln_clang_unavailable(void);

#ifdef __cplusplus
}
#endif

#endif
