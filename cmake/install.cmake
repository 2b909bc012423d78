# Kiln as an installable library: `cmake --install build --prefix P` installs
#   P/bin/kiln                         the command line (linked statically, as in the build tree)
#   P/lib/libkiln.so                   one shared library made from the per-folder static libraries
#   P/include/kiln/...                 the public headers (they include only <kiln/...> and the
#                                      standard library: tests/api/public_headers_test.cpp)
#   P/lib/cmake/Kiln/KilnConfig.cmake  find_package(Kiln) -> the imported target Kiln::kiln
#   P/lib/pkgconfig/kiln.pc            pkg-config --cflags --libs kiln
#
# libkiln.so is every object of the static libraries (they are built -fPIC), so an app links one
# library; Kiln's own dependencies (ONNX, protobuf, libzip, libdl) stay behind it as DT_NEEDED
# entries of libkiln.so, never on the app's link line. Its dynamic symbol table holds the public
# API only (cmake/libkiln.map: what include/kiln/ declares): Kiln's internals, the C++ standard
# library's template instances and anything else linked in stay local. Generated code needs nothing installed: the preludes it
# includes are compiled into the library (codegen/CMakeLists.txt, kiln_embed_text).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_STATIC_LIBRARIES kiln_runtime kiln_ir kiln_frontends kiln_passes kiln_codegen kiln_compiler)
set(KILN_SYMBOL_MAP ${PROJECT_SOURCE_DIR}/cmake/libkiln.map)
# The objects of every static library (all -fPIC); linking the static libraries after them adds
# no object (every symbol is defined already) but brings their own dependencies.
set(KILN_OBJECTS "")
foreach(library ${KILN_STATIC_LIBRARIES})
  list(APPEND KILN_OBJECTS $<TARGET_OBJECTS:${library}>)
endforeach()
add_library(kiln_shared SHARED ${KILN_OBJECTS})
set_target_properties(kiln_shared PROPERTIES
  OUTPUT_NAME kiln
  EXPORT_NAME kiln
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  LINK_DEPENDS ${KILN_SYMBOL_MAP})
set_target_properties(kiln_shared PROPERTIES LINKER_LANGUAGE CXX)
target_link_libraries(kiln_shared PRIVATE ${KILN_STATIC_LIBRARIES})
target_link_options(kiln_shared PRIVATE "LINKER:--version-script=${KILN_SYMBOL_MAP}" "LINKER:--no-undefined")
target_include_directories(kiln_shared INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(kiln_shared INTERFACE cxx_std_20)

install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kiln_shared EXPORT KilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/KilnConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
# kiln.pc: relocatable, its prefix found from where the file is (pkg-config's ${pcfiledir}), so
# it holds for whatever --prefix `cmake --install` is given.
file(RELATIVE_PATH KILN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
