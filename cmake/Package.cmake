# `cpack -G DEB` in a build tree: libdlock-dev, what `cmake --install` installs (headers,
# libdlock.a and the components built, the CMake package, dlock.pc, dlockctl when built), with
# the Debian packages it needs to build against and run. The components' client libraries are
# Recommends: dlock::postgres, dlock::sqlite and dlock::mariadb are in the package only when they
# were built, and a program using only dlock::dlock needs none of them.
set(CPACK_PACKAGE_NAME libdlock-dev)
set(CPACK_PACKAGE_VENDOR "the dlock authors")
set(CPACK_PACKAGE_CONTACT "the dlock authors <dlock@users.noreply.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "distributed locks for C++20 on Apache ZooKeeper, wire-compatible with Apache Curator")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libzookeeper-st-dev (>= 3.8), libboost1.81-dev, libc6, libstdc++6 (>= 12)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libpq-dev, libsqlite3-dev, libmariadb-dev")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "zookeeper, libgtest-dev")
include(CPack)
