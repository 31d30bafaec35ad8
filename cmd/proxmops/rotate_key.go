package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/store"
)

// Environment variables of the encryption key.
const (
	envEncryptionKey    = "PROXMOPS_ENCRYPTION_KEY"
	envNewEncryptionKey = "PROXMOPS_NEW_ENCRYPTION_KEY"
)

func init() {
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Re-encrypt every stored secret with a new encryption key",
		Long: "rotate-key generates a new encryption key and re-encrypts every secret in the database with it,\n" +
			"in one transaction, then replaces the key file (server.keyFile, default <databasePath>.key; an interrupted\n" +
			"rotation is finished on the next start). With PostgreSQL, stop every replica first and copy the new key file to each.\n" +
			"When the key comes from " + envEncryptionKey + ", give the new one in " + envNewEncryptionKey + "\n" +
			"and start the daemon with it afterwards. On SQLite it refuses to run while a daemon uses the database.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), "server.databasePath", "server.database", "server.keyFile")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, warnings, err := config.Load(config.LoadOptions{Flags: flags})
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
		}
		if cfg.Server.Database == "" { // SQLite: one writer at a time
			if _, err := os.Stat(cfg.Server.DatabasePath); err != nil {
				return fmt.Errorf("database %s: %w", cfg.Server.DatabasePath, err)
			}
			lock, err := store.LockWriter(cfg.Server.DatabasePath, "rotate-key", "")
			if err != nil {
				return err
			}
			defer lock.Release()
		}
		st, err := store.Open(cmd.Context(), store.ServerOptions(cfg.Server, os.Getenv(envEncryptionKey)))
		if err != nil {
			return err
		}
		defer st.Close()
		alone, err := st.LockAlone(cmd.Context()) // PostgreSQL: no replica may run
		if err != nil {
			return err
		}
		defer alone()
		old := st.KeyID()
		id, err := st.RotateKey(cmd.Context(), os.Getenv(envNewEncryptionKey))
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "every secret in %s is now encrypted with key %s (was %s)\n", st.Where(), id, old)
		if cfg.Server.Database != "" && os.Getenv(envEncryptionKey) == "" {
			fmt.Fprintf(cmd.OutOrStdout(), "copy %s to every replica before starting them again\n", cfg.Server.KeyFile)
		}
		if os.Getenv(envEncryptionKey) != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "start the daemon with %s set to the new key\n", envEncryptionKey)
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}
