package source

import (
	"errors"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// go-git's own file transport runs the git-upload-pack program. proxmops
// must work without git installed, so file:// is served in process by
// go-git's server package instead, with a loader that opens bare
// repositories and work trees (whose .git may be a directory or a
// "gitdir:" file, as in submodules) alike.
func init() {
	client.InstallProtocol("file", server.NewClient(fileLoader{}))
}

type fileLoader struct{}

func (fileLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	repo, err := git.PlainOpenWithOptions(ep.Path, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, transport.ErrRepositoryNotFound
		}
		return nil, err
	}
	return repo.Storer, nil
}
