# SPYGLASS_STATIC=ON: a spyglass binary to copy onto a production host or into a container
# where no build tools and no -dev packages exist. Every dependency is linked from its static
# archive; glibc stays dynamic (a statically linked glibc cannot load NSS modules and ties the
# binary to one kernel ABI surface), and libstdc++ and libgcc are linked in, so `ldd` lists only
# glibc's own libraries. Included before find_package so that only static archives are found.
#
# Debian ships no static libfmt or libspdlog: both are compiled in from their header-only
# forms, which Debian's libfmt-dev and libspdlog-dev provide. spdlog's own header-only target
# links the shared libfmt, so this file defines the two targets itself.
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
add_link_options(-static-libstdc++ -static-libgcc)

function(spyglass_static_targets)
  find_package(Threads REQUIRED)
  add_library(spyglass_fmt_static INTERFACE)
  target_link_libraries(spyglass_fmt_static INTERFACE fmt::fmt-header-only)
  add_library(spyglass_spdlog_static INTERFACE)
  target_compile_definitions(spyglass_spdlog_static INTERFACE SPDLOG_FMT_EXTERNAL)
  target_link_libraries(spyglass_spdlog_static INTERFACE fmt::fmt-header-only Threads::Threads)
  # libdw and libelf with what `pkg-config --static --libs libelf libdw` lists after them.
  set(archives)
  foreach(name dw elf bz2 lzma z)
    find_library(SPYGLASS_STATIC_LIB_${name} NAMES lib${name}.a REQUIRED)
    list(APPEND archives ${SPYGLASS_STATIC_LIB_${name}})
  endforeach()
  set(SPYGLASS_FMT spyglass_fmt_static PARENT_SCOPE)
  set(SPYGLASS_SPDLOG spyglass_spdlog_static PARENT_SCOPE)
  set(SPYGLASS_ELF ${archives} Threads::Threads PARENT_SCOPE)
  find_library(SPYGLASS_STATIC_LIB_zstd NAMES libzstd.a REQUIRED)
  set(SPYGLASS_ZSTD ${SPYGLASS_STATIC_LIB_zstd} PARENT_SCOPE)
endfunction()
