namespace spyglass::cli {
int run_cli(int argc, char** argv);
}

int main(int argc, char** argv) {
    return spyglass::cli::run_cli(argc, argv);
}
