# Header-only dependencies from Debian's -dev packages: nlohmann-json3-dev and doctest-dev.
if(EMSCRIPTEN)
  # The Emscripten toolchain re-roots find_package into its sysroot, and putting /usr/include on
  # an emcc include path pulls in host glibc headers (../shared/design/toolchain.md, Q2). Link
  # only the two library folders into the build tree and declare targets named like the real ones.
  set(vendored "${CMAKE_BINARY_DIR}/host_headers")
  file(MAKE_DIRECTORY "${vendored}")
  foreach(dir nlohmann doctest)
    if(NOT EXISTS "${vendored}/${dir}")
      file(CREATE_LINK "/usr/include/${dir}" "${vendored}/${dir}" SYMBOLIC)
    endif()
  endforeach()
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json INTERFACE "${vendored}")
  add_library(doctest::doctest INTERFACE IMPORTED)
  target_include_directories(doctest::doctest INTERFACE "${vendored}")
else()
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(doctest 2.4 REQUIRED)
endif()
