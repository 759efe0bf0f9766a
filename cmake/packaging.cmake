# What `cmake --install` puts where, and the Debian package (`cpack -G DEB`), whose
# dependencies dpkg-shlibdeps computes from the installed binary. The man page and the shell
# completions are written by the built binary itself (spyglass manpage, spyglass completions),
# so they describe exactly the options it parses.
include(GNUInstallDirs)

set(SPYGLASS_DOC_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated/doc)
set(SPYGLASS_DOC_FILES ${SPYGLASS_DOC_DIR}/spyglass.1.gz ${SPYGLASS_DOC_DIR}/spyglass.bash
    ${SPYGLASS_DOC_DIR}/_spyglass ${SPYGLASS_DOC_DIR}/spyglass.fish)
add_custom_command(
  OUTPUT ${SPYGLASS_DOC_FILES}
  COMMAND ${CMAKE_COMMAND} -DSPYGLASS=$<TARGET_FILE:spyglass> -DDIR=${SPYGLASS_DOC_DIR}
          -P ${PROJECT_SOURCE_DIR}/cmake/write_docs.cmake
  DEPENDS spyglass ${PROJECT_SOURCE_DIR}/cmake/write_docs.cmake
  COMMENT "Writing the man page and the shell completions" VERBATIM)
add_custom_target(spyglass_docs ALL DEPENDS ${SPYGLASS_DOC_FILES})

install(TARGETS spyglass RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${SPYGLASS_DOC_DIR}/spyglass.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${SPYGLASS_DOC_DIR}/spyglass.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME spyglass)
install(FILES ${SPYGLASS_DOC_DIR}/_spyglass DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${SPYGLASS_DOC_DIR}/spyglass.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES README.md docs/architecture.md docs/output-formats.md docs/top.md docs/performance.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME spyglass)
set(CPACK_PACKAGE_VENDOR spyglass)
set(CPACK_PACKAGE_CONTACT "spyglass developers <spyglass@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "sampling profiler for running Python programs")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "spyglass attaches to a live CPython process from outside (no restart, no code added, no\n"
    "pause by default), samples every thread's Python stack, tags each sample on-CPU or\n"
    "waiting, and writes flame graphs, folded stacks, pprof, speedscope or Chrome trace files,\n"
    "a live top view, or a dump of every thread's stack.")
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION ${CPACK_DEBIAN_PACKAGE_DESCRIPTION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# --push loads libcurl at run time (dlopen: the static binary has none of its own), which
# shlibdeps cannot see.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libcurl4")
set(CPACK_STRIP_FILES ON)
include(CPack)
