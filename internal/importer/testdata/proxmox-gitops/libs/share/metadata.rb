name 'share'
depends 'config'
